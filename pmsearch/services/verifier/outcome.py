"""What of a draft the verifier believes: pure code, no I/O.

A draft (:class:`VerificationRequested`) is written by the planner, the answerer or the
gateway's watchdog, and the first two act on model output steered by mail. So:

* its envelope (run, tenant, scope token, deadline) and question must be the ones the
  gateway recorded when it admitted the run (:class:`RunMeta`), else it is refused;
* a degraded run's hits are rebuilt from the evidence the searcher stored; the draft
  contributes only which messages, in which order, with which score;
* an unanswered result carries a fixed :data:`ReasonCode` chosen here from checked
  facts; the stage's own words survive only as ``model_note``, labelled as the model's.
* a run ends ``cancelled`` exactly when the gateway recorded its owner's cancellation
  on the record (:func:`cancellation`), whatever ending a draft asks for.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping

from pmsearch.services.verifier.errors import DraftMismatch
from pmsearch.shared.messages import (
    EvidenceMessage,
    Hit,
    ReasonCode,
    RunMeta,
    VerificationRequested,
)
from pmsearch.shared.steering import unverified

MODEL_NOTE_CHARS = 300
SNIPPET_CHARS = 200
_ENVELOPE = ("run_id", "tenant_id", "scope_token", "deadline", "question")


def checked(request: VerificationRequested, run: RunMeta | None) -> VerificationRequested:
    """``request`` if it matches the gateway's record of its run; :class:`DraftMismatch`
    otherwise (no record: a run the gateway never admitted, or one long expired)."""
    if run is None:
        raise DraftMismatch(f"run {request.run_id} has no record at the gateway")
    for field in _ENVELOPE:
        if getattr(request, field) != getattr(run, field):
            raise DraftMismatch(f"the draft's {field} is not the one the gateway recorded for run {run.run_id}")
    return request


def cancellation(request: VerificationRequested, run: RunMeta | None) -> VerificationRequested:
    """The ending the run gets, given its record: every draft of a run its owner
    cancelled ends it ``cancelled`` (keeping the draft's trace), and only such a run may
    be ended ``cancelled`` (:class:`DraftMismatch` otherwise), so no stage but the
    gateway, which records the cancellation, can cancel a run."""
    if run is not None and run.cancelled_at is not None:
        if request.ending == "cancelled":
            return request
        return request.model_copy(update={"ending": "cancelled", "draft": None, "reason": None})
    if request.ending == "cancelled":
        raise DraftMismatch(f"run {request.run_id} was not cancelled by its owner")
    return request


def degraded_hits(hits: list[Hit], evidence: Mapping[str, EvidenceMessage]) -> list[Hit]:
    """``hits`` rebuilt from stored evidence; a message the searcher did not store for
    this run is dropped."""
    out: list[Hit] = []
    seen: set[str] = set()
    for hit in hits:
        msg = evidence.get(hit.message_id)
        if msg is None or msg.message_id in seen:
            continue
        seen.add(msg.message_id)
        plain = msg.snippet or " ".join(msg.body.split())[:SNIPPET_CHARS]
        out.append(
            Hit(
                message_id=msg.message_id,
                thread_id=msg.thread_id,
                mailbox=msg.mailbox,
                sender=msg.sender,
                date=msg.date,
                subject=msg.subject,
                snippet=html.escape(plain),  # Hit.snippet is an HTML fragment
                score=hit.score if math.isfinite(hit.score) else 0.0,
                has_attachments=bool(msg.attachments),
            )
        )
    return out


def reason_code(
    request: VerificationRequested,
    *,
    kept: int,
    removed: int,
    evidence: Mapping[str, EvidenceMessage],
    finished_at: float,
    expired: bool = False,
) -> ReasonCode | None:
    """Why the run ends unanswered (None when it is answered); ``expired``: an answer
    read after the run's evidence was gone."""
    if request.ending == "cancelled":
        return "cancelled"
    if expired:
        return "evidence_expired"
    if request.ending == "answer":
        if kept:
            return None
        return "all_sentences_removed" if removed else "empty_draft"
    if request.ending == "budget_exhausted":
        return "time_budget_spent" if finished_at >= request.deadline else "step_budget_spent"
    if request.ending == "degraded":
        return "model_unavailable"
    return "no_answer_found" if evidence else "nothing_found"


def model_note(request: VerificationRequested) -> str | None:
    """The stage's own words on the ending, shortened and without a paragraph that
    steers (:func:`pmsearch.shared.steering.unverified`); never a verdict."""
    return unverified(request.reason or "", MODEL_NOTE_CHARS) or None
