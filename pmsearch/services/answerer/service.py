"""The answerer owns the answer: whatever the model wrote becomes a cited draft here, and
goes to the verifier.

Two ways in. The planner's answer attempt may carry the model's answer (the one-call
path of an easy question); when that answer leaves out a part the question asks for
(a time, a place, an amount), the model is asked once, continuing the same
conversation, to add it (:mod:`.reply`). Otherwise (the last step, the single-shot
strategy) the answerer asks the model once, over the same passages. Then, by pure
functions: the sentences that only pad the answer go (:mod:`.padding`), each sentence's
sources are chosen by code or kept as the model gave them, by setting, and the source's
details, a left-out part and what other messages state differently are added
(:mod:`.draft`). It never writes results; a reply it cannot use still reaches the
verifier as an ending, so every run finishes.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Literal

from redis.asyncio import Redis

from pmsearch.services.answerer import metrics
from pmsearch.services.answerer.choice import chosen_statements
from pmsearch.services.answerer.draft import cite, extracted
from pmsearch.services.answerer.reply import follow_up, leaves_out_less, left_out, written
from pmsearch.shared import extracts, prompts, streams
from pmsearch.shared import passages as P
from pmsearch.shared.bus import publish
from pmsearch.shared.fencing import Fence
from pmsearch.shared.llm import ModelClient
from pmsearch.shared.llm.bookkeeping import ModelCall, call_model
from pmsearch.shared.messages import (
    AnswerRequested,
    Draft,
    DraftSentence,
    Ending,
    EvidenceMessage,
    StepTrace,
    Trace,
    Usage,
    VerificationRequested,
)
from pmsearch.shared.runstore import RunStore


class Answerer:
    def __init__(
        self, redis: Redis, model: ModelClient, citation_source: Literal["code", "model"] = "code",
        texts: prompts.PromptSettings | None = None,
    ) -> None:
        self.redis = redis
        self.model = model
        self.citation_source = citation_source
        self.texts = texts or prompts.prompt_settings()

    async def answer(self, req: AnswerRequested) -> None:
        evidence = await RunStore(self.redis).evidence_list(req.run_id, req.focus)
        trace, usage = req.trace.model_copy(deep=True), req.usage.model_copy()
        step = StepTrace(step=req.step, kind="answer")
        started = time.monotonic()
        ending: Ending = "answer"
        reason: str | None = None
        sentences = list(req.proposed)
        extract = req.answer_style == "extract"
        if req.chosen is not None and evidence:
            sentences = chosen_statements(req.chosen.sentences, evidence)
        elif req.carried is not None and evidence:
            said = written(req.carried.labels, req.carried.sentences)
            sentences = await self._completed(req, evidence, said, step, usage)
        if not sentences and not evidence:
            ending, reason = "insufficient_evidence", "nothing was found to answer from"
        elif not sentences and time.time() >= req.deadline:
            ending, reason = "budget_exhausted", "the time budget ran out before the answer was written"
        elif not sentences:
            shown = P.build(req.question, evidence, first=req.found_later)
            labelled = extracts.labelled(shown) if extract else []
            if labelled:
                messages = prompts.extract_messages(self.texts, req.question, shown, Fence.new())
                schema = prompts.choice_model([s.label for s in labelled], "AnswerChoice")
            else:
                messages = prompts.answer_messages(self.texts, req.question, shown, Fence.new())
                schema = prompts.answer_model([p.ref for p in shown], "AnswerDraft", self.texts.sentence)
            reply = await call_model(self.model, "answer", messages, schema, name="answer", deadline=req.deadline)
            _count(step, usage, reply)
            if reply.value is not None:
                if labelled:
                    chosen = extracts.read_choice(list(reply.value.sentences), labelled)
                    sentences = chosen_statements([s.chosen() for s in chosen], evidence)
                else:
                    sentences = written(P.labels(shown), reply.value.answer)
                if not sentences:
                    ending, reason = "insufficient_evidence", "the model found that the mail does not answer this"
            elif reply.result == "invalid":
                ending, reason = "insufficient_evidence", reply.error
            elif time.time() >= req.deadline:
                ending, reason = "budget_exhausted", "the time budget ran out"
            else:
                ending, reason = "degraded", reply.error
        draft = None
        if ending == "answer":
            # The mail's own sentences need no padding dropped and no sources chosen.
            made = extracted if extract else partial(cite, citation_source=self.citation_source, style=req.answer_style)
            cited = made(req.question, sentences, evidence)
            draft = cited.draft
            step.cited_by_model, step.cited_by_code = cited.by_model, cited.by_code
            step.note = "; ".join(filter(None, [step.note, *cited.notes])) or None
        step.duration_ms = (time.monotonic() - started) * 1000
        step.note = reason or step.note
        trace.steps.append(step)
        usage.seconds = round(usage.seconds + (time.monotonic() - started), 3)
        await self._publish(req, ending, reason, draft=draft, trace=trace, usage=usage)

    async def _completed(
        self, req: AnswerRequested, evidence: list[EvidenceMessage], first: list[DraftSentence], step: StepTrace,
        usage: Usage,
    ) -> list[DraftSentence]:
        """The carried answer, completed: when it leaves out a part the question asks
        for, the model is asked once to add it, over the passages the attempt showed, and
        the second answer is kept only when it leaves out less (both calls are counted)."""
        lacking = left_out(req.question, first)
        if not lacking or time.time() >= req.deadline:
            return first
        shown = P.build(req.question, evidence, first=req.found_later)
        schema = prompts.answer_model([p.ref for p in shown], "PlannerAnswer", self.texts.sentence)
        messages = follow_up(self.texts, req.question, shown, req.carried, schema, lacking)
        if messages is None:
            return first
        again = await call_model(self.model, "answer", messages, schema, name="planner_answer", deadline=req.deadline)
        _count(step, usage, again)
        second = written(P.labels(shown), again.value.answer) if again.value is not None else []
        better = leaves_out_less(req.question, first, second)
        metrics.COMPLETIONS.labels("second" if better else "first").inc()
        return second if better else first

    async def give_up(self, req: AnswerRequested) -> None:
        """The request was dead-lettered (it failed every delivery): its run still ends,
        ``degraded`` with the question's own search, rather than waiting for the watchdog."""
        await self._publish(req, "degraded", "the answerer could not handle this run", draft=None, trace=req.trace, usage=req.usage)

    async def _publish(
        self, req: AnswerRequested, ending: Ending, reason: str | None, *, draft: Draft | None, trace: Trace, usage: Usage
    ) -> None:
        metrics.DRAFTS.labels(ending).inc()
        await publish(
            self.redis,
            streams.DRAFTS_FROM_ANSWERER,
            VerificationRequested(
                run_id=req.run_id, tenant_id=req.tenant_id, scope_token=req.scope_token, deadline=req.deadline,
                question=req.question, ending=ending, draft=draft, trace=trace, usage=usage,
                hits=req.hits if ending == "degraded" else [], reason=reason,
            ),
        )


def _count(step: StepTrace, usage: Usage, call: ModelCall) -> None:
    """Add one model call's usage to the answer step's and to the run's."""
    spent = call.usage()
    step.model_usage = step.model_usage or Usage()
    for total in (step.model_usage, usage):
        total.model_calls += spent.model_calls
        total.prompt_tokens += spent.prompt_tokens
        total.completion_tokens += spent.completion_tokens
