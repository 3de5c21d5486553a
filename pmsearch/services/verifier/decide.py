"""The one result of a run: its verdict (:func:`.service.verify`) made into the
:class:`RunResult` the gateway serves, with the evidence it was judged on and the trace
of how it got there. Pure code, no I/O, no model.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from datetime import UTC

from pmsearch.services.verifier.outcome import SNIPPET_CHARS, degraded_hits, model_note, reason_code
from pmsearch.services.verifier.service import UNSUPPORTED_THRESHOLD, Verdict, verify
from pmsearch.services.verifier.trace import REMOVED_CHARS, checked_trace, checked_usage
from pmsearch.shared.messages import (
    Answer,
    Draft,
    EvidenceMessage,
    EvidenceSummary,
    RemovedSentence,
    RunMeta,
    RunResult,
    ToolCall,
    Trace,
    VerificationRequested,
)
from pmsearch.shared.steering import unverified
from pmsearch.shared.text.citations import find_markers

log = logging.getLogger("pmsearch.verifier")


def run_evidence(
    request: VerificationRequested, evidence: Mapping[str, EvidenceMessage]
) -> dict[str, EvidenceMessage]:
    """The evidence this run may cite: entries stored under their own ID, of its tenant.

    The searcher writes the hash per run, so this should drop nothing; it is a second
    line against a corrupted or foreign entry ever being cited.
    """
    return {
        key: msg
        for key, msg in evidence.items()
        if key == msg.message_id and msg.tenant_id == request.tenant_id
    }


def _cites(draft: Draft | None) -> bool:
    if draft is None:
        return False
    return any(s.citations for s in draft.sentences or []) or bool(find_markers(draft.text or ""))


def _when(msg: EvidenceMessage) -> float:
    if msg.date is None:
        return float("-inf")
    date = msg.date if msg.date.tzinfo else msg.date.replace(tzinfo=UTC)
    return date.timestamp()


def summaries(
    evidence: Mapping[str, EvidenceMessage], cited_first: list[str]
) -> list[EvidenceSummary]:
    """Evidence summaries: cited messages in citation order, then the rest newest first."""
    rest = sorted(
        (m for k, m in evidence.items() if k not in cited_first),
        key=lambda m: (-_when(m), m.message_id),
    )
    ordered = [evidence[k] for k in cited_first if k in evidence] + rest
    return [
        EvidenceSummary.of(m, m.snippet or " ".join(m.body.split())[:SNIPPET_CHARS])
        for m in ordered
    ]


def _searched(trace: Trace) -> list[ToolCall]:
    """What was searched: the trace's own list, else every tool call of its steps."""
    if trace.searched:
        return list(trace.searched)
    calls: list[ToolCall] = []
    seen: set[str] = set()
    for step in trace.steps:
        for outcome in step.tool_calls:
            if outcome.call_id in seen:
                continue
            seen.add(outcome.call_id)
            calls.append(
                ToolCall(call_id=outcome.call_id, tool=outcome.tool, arguments=outcome.arguments)
            )
    return calls


def _safe_verify(
    draft: Draft, evidence: Mapping[str, EvidenceMessage], unsupported_threshold: float, question: str
) -> Verdict:
    """verify(), but a bug in it ends the run without an answer instead of wedging it."""
    try:
        return verify(draft, evidence, unsupported_threshold=unsupported_threshold, question=question)
    except Exception:  # noqa: BLE001 - the run must still finish, unanswered
        log.exception("verification failed; treating the whole draft as malformed")
        text = draft.text or " ".join(s.text for s in draft.sentences or [])
        return Verdict(removed=[RemovedSentence(text=text, reason="malformed")])


def decide_with_verdict(
    request: VerificationRequested,
    evidence: Mapping[str, EvidenceMessage],
    *,
    now: float | None = None,
    unsupported_threshold: float = UNSUPPORTED_THRESHOLD,
    run: RunMeta | None = None,
) -> tuple[RunResult, Verdict]:
    """The run's result and, for an ``answer`` ending, the verdict behind it.

    ``request`` must have passed :func:`.outcome.checked` against the run's record
    (``run``); the result takes from it only what that checked, the verdict and what
    stored evidence and the record confirm (see :mod:`.outcome` and :mod:`.trace`)."""
    stored, evidence = evidence, run_evidence(request, evidence)
    finished_at = time.time() if now is None else now
    trace = checked_trace(request.trace, evidence, run)
    trace.searched = _searched(trace)
    verdict = Verdict()
    answer: Answer | None = None
    hits = []

    # A draft citing what the run found, and the run holds none of it: its evidence
    # expired before this draft was read. Verified against nothing, every sentence would
    # be removed: a verdict on an answer nobody checked.
    expired = request.ending == "answer" and not stored and _cites(request.draft)
    if expired:
        outcome = "budget_exhausted"
    elif request.ending == "answer":
        if request.draft is not None:
            verdict = _safe_verify(request.draft, evidence, unsupported_threshold, request.question)
        answer = verdict.answer()
        trace.removed_sentences.extend(
            r.model_copy(update={"text": unverified(r.text, REMOVED_CHARS)}) for r in verdict.removed
        )
        outcome = "answered" if answer is not None else "insufficient_evidence"
    else:
        # The other endings never carry an answer, whatever the message holds.
        outcome = request.ending
        if outcome == "degraded":
            hits = degraded_hits(request.hits, evidence)
    reason = reason_code(
        request, kept=len(verdict.kept), removed=len(verdict.removed), evidence=evidence, finished_at=finished_at,
        expired=expired,
    )

    cited: list[str] = []
    for sentence in answer.sentences if answer else []:
        for citation in sentence.citations:
            if citation.message_id not in cited:
                cited.append(citation.message_id)

    result = RunResult(
        run_id=request.run_id,
        tenant_id=request.tenant_id,
        outcome=outcome,
        question=request.question,
        answer=answer,
        evidence=summaries(evidence, cited),
        hits=hits,
        trace=trace,
        usage=checked_usage(request.usage, run, finished_at),
        reason=reason,
        model_note=model_note(request),
        finished_at=finished_at,
    )
    return result, verdict


def decide(
    request: VerificationRequested,
    evidence: Mapping[str, EvidenceMessage],
    *,
    now: float | None = None,
    unsupported_threshold: float = UNSUPPORTED_THRESHOLD,
    run: RunMeta | None = None,
) -> RunResult:
    """The one result of the run (see the outcome table in docs/design.md)."""
    return decide_with_verdict(
        request, evidence, now=now, unsupported_threshold=unsupported_threshold, run=run
    )[0]
