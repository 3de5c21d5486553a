"""The planner's loop, evidence first: search the question at once, then let the model
try to answer with that evidence in view. Easy questions end there, with one model call.
When the attempt finds no answer and the step budget allows another round, the model
asks for specific searches (or says none can help), and the next attempt reads what
they found. A run's state lives in Redis, so any replica can take its next message.

The loop is a small state machine over :class:`RunState.decision`:

    pending --first search in--> judging --attempt--> answer | planning | give_up | degraded
    planning --search round--> search --observations in--> judging --attempt--> ...
    any --deadline or step budget--> done (budget_exhausted)

Every transition is "effect, then mark": it publishes, then saves the state that says it
did, so a message redelivered after a crash redoes what did not happen (a publish done
twice is dropped downstream: a second observation of a step, a second draft of a run).
``judging`` and ``planning`` are saved before their model call; whoever advances the run
next takes the call over under a new turn, and a reply of an older turn is dropped.

A round (an attempt and its search round) is one step of the budget. Measured on the
embedded 1.5B model, one call that may either answer or search mostly did neither; an
answer attempt and a separate search request each get done.

The ``single_shot`` strategy (the baseline an evaluation compares against) is one plain
hybrid search and one answer call in the answerer, no decision at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, Literal

from pmsearch.services.planner import metrics
from pmsearch.services.planner.attempts import carried, chosen
from pmsearch.services.planner.filters import drop_unasked, has_filters
from pmsearch.services.planner.repository import PlannerRepository
from pmsearch.services.planner.schemas import RunState, call_models, search_model
from pmsearch.shared import extracts, prompts, streams
from pmsearch.shared import passages as P
from pmsearch.shared.fencing import Fence
from pmsearch.shared.llm import ModelClient
from pmsearch.shared.llm.bookkeeping import ModelCall, call_model
from pmsearch.shared.messages import (
    AnswerRequested,
    Ending,
    EvidenceMessage,
    ProgressEvent,
    RunRequested,
    StepTrace,
    ToolBatchCompleted,
    ToolBatchRequested,
    ToolCall,
    VerificationRequested,
    WidenAttempt,
)

MAX_CALLS_PER_STEP = 3
FIRST_SEARCH_LIMIT = 8
FIRST_SEARCH_THREAD_LATEST = 1
FIRST_SEARCH_SENT = "tools:0"

# What a model call leaves: the call due next (None: none, or the run moved on without
# this one), and the state that was saved with that choice.
Step = tuple[Literal["judging", "planning"] | None, RunState]


def first_search(question: str, strategy: str = "loop") -> ToolCall:
    """The search every run starts with: the question itself, hybrid; the loop also
    asks for the latest message of the threads it hits and for the messages beside
    each hit in its thread (the request a found reply answers, the reply to a found
    request)."""
    return ToolCall(
        call_id="s0-1",
        tool="search",
        arguments={
            "query": question[:500], "mode": "hybrid", "limit": FIRST_SEARCH_LIMIT,
            "thread_latest": FIRST_SEARCH_THREAD_LATEST if strategy == "loop" else 0,
            "thread_neighbours": strategy == "loop",
        },
    )


class Planner:
    def __init__(
        self, repo: PlannerRepository, model: ModelClient, texts: prompts.PromptSettings | None = None,
        min_coverage: float = 0.0,
    ) -> None:
        self.repo = repo
        self.model = model
        self.texts = texts or prompts.prompt_settings()
        self.min_coverage = min_coverage  # see attempts.chosen

    # ------------------------------------------------------------ entry points

    async def start(self, req: RunRequested) -> None:
        """Admit a run: search the question at once; the first decision waits for it.
        A redelivery sends the first search only if the first delivery did not."""
        state = RunState(run=req, awaiting=[0])
        state.trace.steps.append(StepTrace(step=0, kind="first_search", note="hybrid search of the question"))
        if not await self.repo.create(state):
            state = await self.repo.load(req.run_id)
            if FIRST_SEARCH_SENT in state.sent or 0 not in state.awaiting:
                await self.advance(req.run_id)  # e.g. ends a run whose deadline passed meanwhile
                return
        call = first_search(req.question, req.strategy)
        # Effect, then mark: a crash in between sends the search once more, and the
        # second observation of step 0 is dropped as a duplicate.
        await self._send_tools(state, 0, [call], kind="first_search")
        async with self.repo.holding(req.run_id) as held:
            state = held.state
            state.sent.append(FIRST_SEARCH_SENT)
            held.save(state)

    async def observe(self, batch: ToolBatchCompleted) -> None:
        """Record a step's tool outcomes, then move the run on. A step recorded already
        (a redelivery, or a duplicate) still moves the run on: what followed the
        recording may not have happened."""
        async with self.repo.holding(batch.run_id) as held:
            state = held.state
            if batch.step in state.awaiting:
                state.awaiting.remove(batch.step)
                self._record(state, batch)
            phase = await self._next(state)
            held.save(state)
        await self._follow(phase, state)

    async def advance(self, run_id: str) -> None:
        """Take every transition due now. Safe to repeat: each transition publishes
        before it saves its mark, and a model call left unfinished (its worker died) is
        made again under a new turn, the older turn's reply being dropped."""
        async with self.repo.holding(run_id) as held:
            state = held.state
            phase = await self._next(state)
            held.save(state)
        await self._follow(phase, state)

    async def _follow(self, phase: Literal["judging", "planning"] | None, state: RunState) -> None:
        """Make the model calls due, one after another. Each call's reply is recorded
        and the next transition taken under one hold of the run's lock (a hold is a
        read and a write of the state, two round trips)."""
        while phase is not None:
            phase, state = await (self._decide(state) if phase == "judging" else self._plan(state))

    async def _shown(self, state: RunState) -> tuple[list[EvidenceMessage], list[P.Passage]]:
        evidence = await self.repo.evidence(state.run.run_id, state.focus)
        return evidence, P.build(state.run.question, evidence, first=state.found_later)

    @staticmethod
    def _still(state: RunState, turn: int, phase: str) -> RunState | None:
        """``state`` if this turn still holds ``phase``; None when a later turn took the
        call over or the run moved on (e.g. its deadline ended it)."""
        return state if state.decision == phase and state.turn == turn else None

    async def _decide(self, state: RunState) -> Step:
        """The answer attempt; the model call due next, if any, and the state it was
        taken from."""
        run, turn = state.run, state.turn
        _, shown = await self._shown(state)
        if not shown:
            # Nothing in scope matches: no model call can answer from nothing.
            async with self.repo.holding(run.run_id) as held:
                if (now := self._still(held.state, turn, "judging")) is None:
                    return None, state
                now.decision, now.reason = "give_up", "nothing in the caller's mail matches the question"
                phase = await self._next(now)
                held.save(now)
            return phase, now
        fence = Fence.new()
        sentences = extracts.labelled(shown) if run.answer_style == "extract" else []
        if sentences:
            messages = prompts.extract_messages(self.texts, run.question, shown, fence, state.notes)
            schema = prompts.choice_model([s.label for s in sentences], "PlannerChoice")
        else:
            messages = prompts.answer_messages(self.texts, run.question, shown, fence, state.notes)
            schema = prompts.answer_model([p.ref for p in shown], "PlannerAnswer", self.texts.sentence)
        reply = await call_model(self.model, "decide", messages, schema, name="planner_answer", deadline=run.deadline)
        async with self.repo.holding(run.run_id) as held:
            if (now := self._still(held.state, turn, "judging")) is None:
                return None, state
            if sentences:
                handed = partial(chosen, now, sentences, shown, self.min_coverage)
            else:
                handed = partial(carried, now, P.labels(shown), fence, list(state.notes))
            if await self._attempted(now, reply, handed):
                now.decision = "planning"
            phase = await self._next(now)
            held.save(now)
        return phase, now

    async def _plan(self, state: RunState) -> Step:
        """The search round after an attempt without an answer; the model call due
        next, if any, and the state it was taken from."""
        run, turn = state.run, state.turn
        evidence, shown = await self._shown(state)  # what the attempt was shown
        calls = call_models(message_ids=[m.message_id for m in evidence], thread_ids=list(P.thread_ids(shown)))
        rounds_left = run.max_steps - state.steps_used
        reply = await call_model(
            self.model, "search", prompts.search_messages(self.texts, run.question, shown, state.notes, Fence.new(), rounds_left),
            search_model(calls), name="planner_search", deadline=run.deadline,
        )
        async with self.repo.holding(run.run_id) as held:
            if (now := self._still(held.state, turn, "planning")) is None:
                return None, state
            await self._searched(now, reply, shown)
            phase = await self._next(now)
            held.save(now)
        return phase, now

    # ------------------------------------------------------------ transitions

    async def _next(self, state: RunState) -> Literal["judging", "planning"] | None:
        """Take the transition the state allows now; the model call due, if any."""
        if state.decision == "done":
            return None
        if await self.repo.finished(state.run.run_id):
            state.decision = "done"
            return None
        if time.time() >= state.run.deadline:
            await self._finish(state, "budget_exhausted", "the time budget ran out")
            return None
        if state.awaiting:
            return None
        if state.decision == "judging" or state.decision == "planning":
            # A model call is due, or was under way when its worker died: (re)take it.
            state.turn += 1
            return state.decision
        if state.decision == "pending" and state.run.strategy == "single_shot":
            state.decision = "answer"
        if state.decision == "degraded":
            await self._finish(state, "degraded", state.reason or "the model is unavailable")
        elif state.decision == "give_up":
            await self._finish(state, "insufficient_evidence", state.reason or "the evidence does not answer this")
        elif state.decision == "answer":
            await self._answer(state)
        elif state.steps_used >= state.run.max_steps:
            await self._finish(state, "budget_exhausted", f"the step budget of {state.run.max_steps} ran out")
        else:
            state.decision = "judging"
            state.turn += 1
            return "judging"
        return None

    def _count(self, state: RunState, reply: ModelCall, kind: str) -> StepTrace:
        usage = reply.usage()
        state.usage.model_calls += usage.model_calls
        state.usage.prompt_tokens += usage.prompt_tokens
        state.usage.completion_tokens += usage.completion_tokens
        trace = StepTrace(step=state.next_step - 1, kind=kind, duration_ms=reply.seconds * 1000, model_usage=usage, note=reply.error)
        state.trace.steps.append(trace)
        return trace

    async def _attempted(self, state: RunState, reply: ModelCall, handed: Callable[[Any], str | None]) -> bool:
        """Take an answer attempt's reply (one step of the budget); True when a search
        round should follow. ``handed`` takes a usable reply: it hands the answer on in
        ``state`` (deciding ``answer``) or not, and returns the step's note, if any."""
        state.next_step += 1
        state.steps_used += 1
        metrics.STEPS.labels("decide").inc()
        trace = self._count(state, reply, "decide")
        if reply.value is None:
            # An unusable reply costs its step and the next step tries again; an
            # unreachable model ends the run with the question's own search results.
            state.decision = "search" if reply.result == "invalid" else "degraded"
            state.reason = reply.error
            return False
        note = handed(reply.value)
        answered = state.decision == "answer"
        if not answered and state.steps_used < state.run.max_steps:
            trace.note = note or "no answer in the evidence yet"
            return True
        if not answered:
            state.decision, state.reason = "give_up", "the model found that the mail does not answer this"
        trace.note = note or state.decision
        await self._progress(state, trace.step)
        return False

    async def _searched(self, state: RunState, reply: ModelCall, shown: list[P.Passage]) -> None:
        """Take a search round's reply: send its fresh calls, or end the run when the
        model sees nothing left to search."""
        step = state.next_step - 1
        metrics.STEPS.labels("search").inc()
        trace = self._count(state, reply, "search")
        if reply.value is None:
            state.decision = "give_up" if reply.result == "invalid" else "degraded"
            state.reason = reply.error
            return
        asked = [c.model_dump(mode="json") for c in reply.value.searches]
        threads = P.thread_ids(shown)
        for item in asked:
            if "thread_id" in item["arguments"]:
                item["arguments"]["thread_id"] = threads.get(item["arguments"]["thread_id"], "")
        calls = self._fresh_calls(state, step, asked)
        if calls:
            trace.note = "search"
            state.awaiting.append(step)
            state.decision = "search"
            await self._send_tools(state, step, calls, kind="search")
            return
        state.decision, state.reason = "give_up", "the model found nothing more to search"
        trace.note = state.decision
        await self._progress(state, step)

    async def _progress(self, state: RunState, step: int) -> None:
        await self.repo.progress(
            state.run.run_id,
            ProgressEvent(event="step", payload={"step": step, "kind": "decide", "action": state.decision}),
            state.run.deadline,
        )

    def _fresh_calls(self, state: RunState, step: int, asked: list[dict]) -> list[ToolCall]:
        calls: list[ToolCall] = []
        for item in asked:
            arguments = {k: v for k, v in item["arguments"].items() if v not in (None, [], "")}
            if item["tool"] == "search":
                arguments, dropped = drop_unasked(state.run.question, arguments)
                if dropped:
                    state.notes.append(f"dropped filters the question never mentioned: {', '.join(dropped)}")
            if any(c.tool == item["tool"] and c.arguments == arguments for c in [*state.trace.searched, *calls]):
                continue
            calls.append(ToolCall(call_id=f"s{step}-{len(calls) + 1}", tool=item["tool"], arguments=arguments))
        return calls[:MAX_CALLS_PER_STEP]

    def _record(self, state: RunState, batch: ToolBatchCompleted) -> None:
        # The search round that sent the calls, not the answer attempt of the same step.
        step = next((s for s in reversed(state.trace.steps) if s.step == batch.step), None)
        new_ids: list[str] = []
        emptied_by_filters = bool(batch.outcomes)
        for o in batch.outcomes:
            if step is not None:
                step.tool_calls.append(o.model_copy(update={"output": None}))
            state.trace.searched.append(ToolCall(call_id=o.call_id, tool=o.tool, arguments=o.arguments))
            if o.widen_attempt:
                state.trace.widen_attempts.append(
                    WidenAttempt(
                        step=batch.step, tool=o.tool, call_id=o.call_id, reason=o.error_code or "widen_refused",
                        detail=o.error or "",
                    )
                )
            fresh = [m for m in o.message_ids if m not in state.focus and m not in new_ids]
            new_ids += fresh
            if batch.step > 0:
                state.notes.append(prompts.search_note(o, len(fresh)))
            emptied_by_filters &= o.ok and not o.message_ids and has_filters(o.arguments)
            if batch.step == 0 and o.ok and o.output is not None and o.output.kind == "hits":
                state.hits = list(o.output.hits)
        # Later finds go first, interleaved with earlier ones, so a targeted search is
        # seen even when the passage budget is tight.
        state.focus = _interleave(new_ids, state.focus) if batch.step > 0 else state.focus + new_ids
        if batch.step > 0:
            state.found_later = new_ids + [m for m in state.found_later if m not in new_ids]
        if emptied_by_filters and not state.refunded and state.steps_used > 0:
            state.refunded = True
            state.steps_used -= 1
            state.notes.append("that search found nothing only because of its filters; the step was given back")

    # ------------------------------------------------------------ effects

    async def _send_tools(self, state: RunState, step: int, calls: list[ToolCall], *, kind: str) -> None:
        run = state.run
        await self.repo.progress(
            run.run_id,
            ProgressEvent(event="step", payload={"step": step, "kind": kind, "calls": [c.model_dump() for c in calls]}),
            run.deadline,
        )
        await self.repo.publish(
            streams.TOOLS,
            ToolBatchRequested(
                run_id=run.run_id, tenant_id=run.tenant_id, scope_token=run.scope_token, deadline=run.deadline, step=step, calls=calls
            ),
        )

    async def _answer(self, state: RunState) -> None:
        run = state.run
        state.decision = "done"
        state.handed_off_at = time.time()
        state.usage.steps = state.steps_used
        state.usage.seconds = round(time.time() - run.started_at, 3)
        metrics.ENDINGS.labels("answer").inc()
        metrics.STEPS_USED.observe(state.steps_used)
        await self.repo.publish(
            streams.ANSWERS,
            AnswerRequested(
                run_id=run.run_id, tenant_id=run.tenant_id, scope_token=run.scope_token, deadline=run.deadline,
                question=run.question, step=state.next_step, trace=state.trace, usage=state.usage,
                focus=state.focus, found_later=state.found_later, hits=state.hits, carried=state.carried,
                proposed=state.proposed, chosen=state.chosen, answer_style=run.answer_style,
            ),
        )

    async def _finish(self, state: RunState, ending: Ending, reason: str) -> None:
        run = state.run
        state.decision = "done"
        state.handed_off_at = time.time()
        state.usage.steps = state.steps_used
        state.usage.seconds = round(time.time() - run.started_at, 3)
        metrics.ENDINGS.labels(ending).inc()
        metrics.STEPS_USED.observe(state.steps_used)
        await self.repo.publish(
            streams.DRAFTS_FROM_PLANNER,
            VerificationRequested(
                run_id=run.run_id, tenant_id=run.tenant_id, scope_token=run.scope_token, deadline=run.deadline,
                question=run.question, ending=ending, trace=state.trace, usage=state.usage,
                hits=state.hits if ending == "degraded" else [], reason=reason,
            ),
        )


def _interleave(first: list[str], second: list[str]) -> list[str]:
    out: list[str] = []
    for i in range(max(len(first), len(second))):
        out += [x[i] for x in (first, second) if i < len(x)]
    return list(dict.fromkeys(out))
