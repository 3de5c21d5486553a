"""The planner's loop: plan, search in parallel, judge, and end the run or hand it to
the answerer. A run's state lives in Redis, so any replica can take its next message.

The loop is a small state machine over :class:`RunState.decision`:

    pending --plan--> search | answer | give_up | degraded
    search --observations in--> judging --model--> search | answer | give_up | degraded
    any --deadline or step budget--> done (budget_exhausted)
"""

from __future__ import annotations

import time
from typing import Any

from services.planner import metrics
from services.planner.prompts import judge_messages, observation_note, plan_messages
from services.planner.repository import PlannerRepository
from services.planner.schemas import FinalAction, PlannerAction, RunState

Action = PlannerAction | FinalAction
from shared import streams
from shared.fencing import Fence
from shared.llm import ModelClient, ModelError, ModelOutputInvalid
from shared.messages import (
    AnswerRequested,
    Ending,
    Hit,
    ProgressEvent,
    RunRequested,
    StepTrace,
    ToolBatchCompleted,
    ToolBatchRequested,
    ToolCall,
    Usage,
    VerificationRequested,
    WidenAttempt,
)

MAX_CALLS_PER_STEP = 3
FIRST_SEARCH_LIMIT = 8


class Planner:
    def __init__(self, repo: PlannerRepository, model: ModelClient) -> None:
        self.repo = repo
        self.model = model

    # ------------------------------------------------------------ entry points

    async def start(self, req: RunRequested) -> None:
        """Admit a run: search the question at once, and plan beside it."""
        state = RunState(run=req, awaiting=[0])
        state.trace.steps.append(StepTrace(step=0, kind="first_search", note="hybrid search of the question"))
        if not await self.repo.create(state):
            return  # redelivered: the first delivery already started this run
        call = ToolCall(
            call_id="s0-1", tool="search", arguments={"query": req.question[:500], "mode": "hybrid", "limit": FIRST_SEARCH_LIMIT}
        )
        await self._send_tools(state, 0, [call], kind="first_search")
        action, usage, seconds, error = await self._ask(plan_messages(req.question, Fence.new()), req.deadline, "plan")
        async with self.repo.locked(req.run_id):
            state = await self.repo.load(req.run_id)
            await self._apply(state, action, usage, seconds, error, kind="plan")
            await self.repo.save(state)
        await self.advance(req.run_id)

    async def observe(self, batch: ToolBatchCompleted) -> None:
        """Record a step's tool outcomes, then move the run on."""
        async with self.repo.locked(batch.run_id):
            state = await self.repo.load(batch.run_id)
            if batch.step not in state.awaiting:
                return  # a duplicate delivery
            state.awaiting.remove(batch.step)
            self._record(state, batch)
            await self.repo.save(state)
        await self.advance(batch.run_id)

    async def advance(self, run_id: str) -> None:
        while True:
            async with self.repo.locked(run_id):
                state = await self.repo.load(run_id)
                judge = await self._next(state)
                await self.repo.save(state)
            if not judge:
                return
            run = state.run
            steps_left = run.max_steps - state.steps_used
            messages = judge_messages(run.question, state.notes, Fence.new(), steps_left)
            # On the last step the reply's schema has no "search": the model must decide.
            schema = FinalAction if steps_left <= 1 else PlannerAction
            action, usage, seconds, error = await self._ask(messages, run.deadline, "judge", schema)
            async with self.repo.locked(run_id):
                state = await self.repo.load(run_id)
                if state.decision != "judging":
                    return
                await self._apply(state, action, usage, seconds, error, kind="refine")
                await self.repo.save(state)

    # ------------------------------------------------------------ transitions

    async def _next(self, state: RunState) -> bool:
        """Take the transition the state allows now; True when a judge call is due."""
        if state.decision in ("done", "judging"):
            return False
        if await self.repo.finished(state.run.run_id):
            state.decision = "done"
            return False
        if time.time() >= state.run.deadline:
            await self._finish(state, "budget_exhausted", "the time budget ran out")
            return False
        if state.awaiting or state.decision == "pending":
            return False
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
            return True
        return False

    async def _apply(
        self, state: RunState, action: Action | None, usage: Usage, seconds: float, error: str | None, *, kind: str
    ) -> None:
        step = state.next_step
        state.next_step += 1
        state.steps_used += 1
        metrics.STEPS.labels(kind).inc()
        _add_usage(state.usage, usage)
        state.trace.steps.append(
            StepTrace(step=step, kind=kind, duration_ms=seconds * 1000, model_usage=usage, note=error or (action.reason if action else None))
        )
        if action is None:
            # An unusable reply counts as a failed step; an unreachable model ends the run.
            state.decision = "search" if error and error.startswith("invalid") else "degraded"
            state.reason = error
            return
        fresh = [c for c in action.calls if not _already_made(state, c.tool, c.arguments)]
        if action.action == "search" and fresh:
            calls = [
                ToolCall(call_id=f"s{step}-{i + 1}", tool=c.tool, arguments=c.arguments)
                for i, c in enumerate(fresh[:MAX_CALLS_PER_STEP])
            ]
            state.awaiting.append(step)
            state.decision = "search"
            await self._send_tools(state, step, calls, kind=kind, note=action.reason)
            return
        if action.action == "search":
            # Every call repeats one already made: nothing new can come of it, so answer
            # from what was found instead of spending the budget on it.
            state.decision = "answer" if state.focus else "give_up"
            state.reason = "the planner repeated earlier searches"
        elif action.action == "give_up":
            state.decision, state.reason = "give_up", action.reason or None
        else:
            state.decision = "answer"
        await self.repo.progress(
            state.run.run_id,
            ProgressEvent(
                event="step",
                payload={"step": step, "kind": kind, "action": state.decision, "reason": state.reason or action.reason},
            ),
        )

    def _record(self, state: RunState, batch: ToolBatchCompleted) -> None:
        step = next((s for s in state.trace.steps if s.step == batch.step), None)
        for o in batch.outcomes:
            if step is not None:
                step.tool_calls.append(o.model_copy(update={"output": None}))
            state.trace.searched.append(ToolCall(call_id=o.call_id, tool=o.tool, arguments=o.arguments))
            if o.widen_attempt:
                state.trace.widen_attempts.append(
                    WidenAttempt(step=batch.step, tool=o.tool, call_id=o.call_id, reason=o.error_code or "widen_refused", detail=o.error or "")
                )
            state.notes.append(observation_note(o))
            for mid in o.message_ids:
                if mid not in state.focus:
                    state.focus.append(mid)
            if batch.step == 0 and o.ok and o.tool == "search":
                state.hits = [_hit(item) for item in o.output or []]

    # ------------------------------------------------------------ effects

    async def _send_tools(self, state: RunState, step: int, calls: list[ToolCall], *, kind: str, note: str | None = None) -> None:
        run = state.run
        await self.repo.progress(
            run.run_id,
            ProgressEvent(event="step", payload={"step": step, "kind": kind, "calls": [c.model_dump() for c in calls], "note": note}),
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
        state.usage.steps = state.steps_used
        state.usage.seconds = round(time.time() - run.started_at, 3)
        metrics.ENDINGS.labels("answer").inc()
        metrics.STEPS_USED.observe(state.steps_used)
        await self.repo.publish(
            streams.ANSWERS,
            AnswerRequested(
                run_id=run.run_id, tenant_id=run.tenant_id, scope_token=run.scope_token, deadline=run.deadline,
                question=run.question, step=state.next_step, trace=state.trace, usage=state.usage,
                focus=state.focus, hits=state.hits,
            ),
        )

    async def _finish(self, state: RunState, ending: Ending, reason: str) -> None:
        run = state.run
        state.decision = "done"
        state.usage.steps = state.steps_used
        state.usage.seconds = round(time.time() - run.started_at, 3)
        metrics.ENDINGS.labels(ending).inc()
        metrics.STEPS_USED.observe(state.steps_used)
        await self.repo.publish(
            streams.DRAFTS,
            VerificationRequested(
                run_id=run.run_id, tenant_id=run.tenant_id, scope_token=run.scope_token, deadline=run.deadline,
                question=run.question, ending=ending, trace=state.trace, usage=state.usage,
                hits=state.hits if ending == "degraded" else [], reason=reason,
            ),
        )

    async def _ask(
        self, messages: list[dict[str, Any]], deadline: float, stage: str, schema: type[Action] = PlannerAction
    ) -> tuple[Action | None, Usage, float, str | None]:
        started = time.monotonic()
        try:
            result = await self.model.structured(messages, schema, name="planner_action", deadline=deadline)
        except ModelOutputInvalid as exc:
            metrics.MODEL_CALLS.labels(stage, "invalid").inc()
            return None, Usage(model_calls=2), time.monotonic() - started, f"invalid model output: {exc.detail}"
        except ModelError as exc:
            metrics.MODEL_CALLS.labels(stage, "unavailable").inc()
            return None, Usage(model_calls=1), time.monotonic() - started, f"model unavailable: {exc.detail}"
        metrics.MODEL_CALLS.labels(stage, "ok").inc()
        metrics.MODEL_SECONDS.labels(stage).observe(result.seconds)
        metrics.MODEL_TOKENS.labels(stage, "prompt").inc(result.usage.prompt_tokens)
        metrics.MODEL_TOKENS.labels(stage, "completion").inc(result.usage.completion_tokens)
        usage = Usage(
            model_calls=result.attempts, prompt_tokens=result.usage.prompt_tokens, completion_tokens=result.usage.completion_tokens
        )
        return result.value, usage, result.seconds, None


def _already_made(state: RunState, tool: str, arguments: dict[str, Any]) -> bool:
    return any(c.tool == tool and c.arguments == arguments for c in state.trace.searched)


def _add_usage(total: Usage, part: Usage) -> None:
    total.model_calls += part.model_calls
    total.prompt_tokens += part.prompt_tokens
    total.completion_tokens += part.completion_tokens


def _hit(view: dict[str, Any]) -> Hit:
    return Hit(
        message_id=view["message_id"], thread_id=view["thread_id"], mailbox=view.get("mailbox", ""),
        sender=view.get("from", ""), date=view.get("date"), subject=view.get("subject", ""),
        snippet=view.get("snippet", ""), score=view.get("score", 0.0),
    )
