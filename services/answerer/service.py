"""The answerer: write cited sentences from the run's evidence and hand them to the
verifier. It never writes results; a reply it cannot use still reaches the verifier as
an ending, so every run finishes."""

from __future__ import annotations

import re
import time

from redis.asyncio import Redis

from services.answerer import metrics
from services.answerer.prompts import answer_messages
from services.answerer.schemas import AnswerDraft
from shared import streams
from shared.bus import publish
from shared.fencing import Fence
from shared.llm import ModelClient, ModelError, ModelOutputInvalid
from shared.messages import (
    AnswerRequested,
    Draft,
    DraftSentence,
    EvidenceMessage,
    StepTrace,
    Usage,
    VerificationRequested,
)

MAX_MESSAGES = 6
_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(
    "the and for are was were did does do has have had our your their with from that this what when which who "
    "after before about into than then them they there any all can will would should could".split()
)


def _stems(text: str) -> set[str]:
    # A five-letter prefix is a crude stem, but enough to match "accept" with "accepted".
    return {w[:5] for w in (t.casefold() for t in _WORD.findall(text)) if len(w) > 2 and w not in _STOP}


def rank_evidence(question: str, messages: list[EvidenceMessage]) -> list[EvidenceMessage]:
    """Messages sharing more of the question's words first; ties keep the search order.
    The model reads only the first few, so the order decides what it can cite."""
    wanted = _stems(question)
    scored = [(-len(wanted & _stems(f"{m.subject} {m.body}")), i, m) for i, m in enumerate(messages)]
    return [m for _, _, m in sorted(scored, key=lambda t: (t[0], t[1]))]


MIN_COVERAGE = 0.5


def coverage(question: str, messages: list[EvidenceMessage]) -> float:
    """The largest share of the question's words that one evidence message mentions."""
    wanted = _stems(question)
    if not wanted or not messages:
        return 0.0
    return max(len(wanted & _stems(f"{m.subject} {m.body}")) / len(wanted) for m in messages)


async def load_evidence(redis: Redis, run_id: str, focus: list[str], question: str = "") -> list[EvidenceMessage]:
    """The run's evidence as the searcher stored it, most relevant first."""
    raw = await redis.hgetall(streams.evidence_key(run_id))
    found = {k.decode() if isinstance(k, bytes) else k: EvidenceMessage.model_validate_json(v) for k, v in raw.items()}
    ordered = [found[m] for m in focus if m in found]
    seen = set(focus)
    ordered += [m for k, m in found.items() if k not in seen]
    return rank_evidence(question, ordered)[:MAX_MESSAGES]


class Answerer:
    def __init__(self, redis: Redis, model: ModelClient) -> None:
        self.redis = redis
        self.model = model

    async def answer(self, req: AnswerRequested) -> None:
        evidence = await load_evidence(self.redis, req.run_id, req.focus, req.question)
        trace, usage = req.trace.model_copy(deep=True), req.usage.model_copy()
        ending, draft, reason = "answer", None, None
        started = time.monotonic()
        if not evidence:
            ending, reason = "insufficient_evidence", "nothing was found to answer from"
        elif coverage(req.question, evidence) < MIN_COVERAGE:
            # No message even mentions most of what was asked: a model asked to answer
            # anyway would cite something real in support of something invented.
            ending, reason = "insufficient_evidence", "no evidence message mentions what the question asks about"
        else:
            try:
                result = await self.model.structured(
                    answer_messages(req.question, evidence, Fence.new()), AnswerDraft, name="answer", deadline=req.deadline
                )
                usage.model_calls += result.attempts
                usage.prompt_tokens += result.usage.prompt_tokens
                usage.completion_tokens += result.usage.completion_tokens
                metrics.MODEL_CALLS.labels("answer", "ok").inc()
                metrics.MODEL_SECONDS.labels("answer").observe(result.seconds)
                metrics.MODEL_TOKENS.labels("answer", "prompt").inc(result.usage.prompt_tokens)
                metrics.MODEL_TOKENS.labels("answer", "completion").inc(result.usage.completion_tokens)
                draft = Draft(sentences=[DraftSentence(text=s.sentence(), citations=s.citations) for s in result.value.sentences])
            except ModelOutputInvalid as exc:
                metrics.MODEL_CALLS.labels("answer", "invalid").inc()
                usage.model_calls += 2
                ending, reason = "insufficient_evidence", f"the answer could not be used: {exc.detail}"
            except ModelError as exc:
                metrics.MODEL_CALLS.labels("answer", "unavailable").inc()
                usage.model_calls += 1
                ending, reason = ("budget_exhausted", "the time budget ran out") if time.time() >= req.deadline else (
                    "degraded",
                    f"model unavailable: {exc.detail}",
                )
        trace.steps.append(StepTrace(step=req.step, kind="answer", duration_ms=(time.monotonic() - started) * 1000, note=reason))
        usage.seconds = round(usage.seconds + (time.monotonic() - started), 3)
        metrics.DRAFTS.labels(ending).inc()
        await publish(
            self.redis,
            streams.DRAFTS,
            VerificationRequested(
                run_id=req.run_id, tenant_id=req.tenant_id, scope_token=req.scope_token, deadline=req.deadline,
                question=req.question, ending=ending, draft=draft, trace=trace, usage=usage,
                hits=req.hits if ending == "degraded" else [], reason=reason,
            ),
        )
