"""A draft's trace and usage, as far as the run's record confirms them: pure code, no I/O.

The trace and usage travel in the draft, which the planner or the answerer wrote, and
both act on model output steered by mail; a compromised one could report searches it
never made, messages it never read, a cost it never spent, or "removed sentences" the
verifier never removed. So the verifier keeps of them only what it can hold against
what the gateway recorded when it admitted the run (:class:`RunMeta`) and what the
searcher stored as the run's evidence:

* removed sentences are the verifier's own, never a draft's;
* message ids (a tool call's results, the answer step's citations) must be in the run's
  stored evidence; a tool call's output is never passed on (the planner never sends one);
* a step count, a duration and token counts are never negative, the run's seconds
  never more than the time from its admission to its verdict, and there are never more
  steps than the run's step budget allows (plus its first search and its answer; a
  step's trace may take a decision, a search round and a retry);
* the text a stage wrote (a step's note, a tool call's arguments, a widening's detail)
  is the model's, unverified: paragraphs that steer are dropped and it is bounded in
  length (:func:`pmsearch.shared.steering.unverified`).
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

from pmsearch.shared.messages import (
    EvidenceMessage,
    RunMeta,
    StepTrace,
    ToolCall,
    ToolOutcome,
    Trace,
    Usage,
    WidenAttempt,
)
from pmsearch.shared.steering import unverified

# A run's steps beyond its budget: the question's own search and the answer.
EXTRA_STEPS = 2
# Trace entries per step at most: a decision, a search round, a retried model call.
ENTRIES_PER_STEP = 3
ARGUMENT_CHARS = 500
NOTE_CHARS = 300
REMOVED_CHARS = 1000  # a removed sentence as shown: the model's text, unverified


def checked_trace(trace: Trace, evidence: Mapping[str, EvidenceMessage], run: RunMeta | None) -> Trace:
    """``trace`` with what the record does not confirm dropped or bounded (module doc)."""
    known = evidence.keys()
    most = (run.max_steps + EXTRA_STEPS) * ENTRIES_PER_STEP if run is not None else None
    return Trace(
        steps=[_step(s, known) for s in trace.steps[:most]],
        searched=[_call(c) for c in trace.searched],
        removed_sentences=[],
        widen_attempts=[_widening(w) for w in trace.widen_attempts],
    )


def checked_usage(usage: Usage, run: RunMeta | None, finished_at: float) -> Usage:
    """``usage`` with no negative count, and no more seconds or steps than the run had."""
    seconds = max(0.0, usage.seconds)
    steps = max(0, usage.steps)
    if run is not None:
        seconds = min(seconds, max(0.0, finished_at - run.created_at))
        steps = min(steps, run.max_steps + EXTRA_STEPS)
    return Usage(
        steps=steps,
        seconds=seconds,
        model_calls=max(0, usage.model_calls),
        prompt_tokens=max(0, usage.prompt_tokens),
        completion_tokens=max(0, usage.completion_tokens),
    )


def _step(step: StepTrace, known: Set[str]) -> StepTrace:
    return step.model_copy(
        update={
            "tool_calls": [_outcome(c, known) for c in step.tool_calls],
            "note": unverified(step.note, NOTE_CHARS) if step.note else step.note,
            "cited_by_model": [i for i in step.cited_by_model if i in known],
            "cited_by_code": [i for i in step.cited_by_code if i in known],
            "duration_ms": max(0.0, step.duration_ms),
            "model_usage": _usage(step.model_usage),
        }
    )


def _usage(usage: Usage | None) -> Usage | None:
    if usage is None:
        return None
    return Usage(**{k: max(0, v) for k, v in usage.model_dump().items()})


def _outcome(call: ToolOutcome, known: Set[str]) -> ToolOutcome:
    return call.model_copy(
        update={
            "arguments": _arguments(call.arguments),
            "error": unverified(call.error, NOTE_CHARS) if call.error else call.error,
            "message_ids": [i for i in call.message_ids if i in known],
            "output": None,
            "duration_ms": max(0.0, call.duration_ms),
        }
    )


def _call(call: ToolCall) -> ToolCall:
    return call.model_copy(update={"arguments": _arguments(call.arguments)})


def _widening(attempt: WidenAttempt) -> WidenAttempt:
    return attempt.model_copy(update={"detail": unverified(attempt.detail, NOTE_CHARS)})


def _arguments(value: Any) -> Any:
    """A tool call's arguments as the model wrote them, each string bounded and without
    steering paragraphs; structure and other values as they are."""
    if isinstance(value, str):
        return unverified(value, ARGUMENT_CHARS)
    if isinstance(value, dict):
        return {str(k)[:100]: _arguments(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_arguments(v) for v in value]
    return value
