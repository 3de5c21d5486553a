"""One model call with its bookkeeping: the outcome as a value, metrics recorded once.

The planner and the answerer call the model through :func:`call_model` rather than
:meth:`ModelClient.structured` directly, so that every call is counted the same way, the
tokens of replies that failed validation are not lost, and a failure is a result to
branch on (``invalid`` → ask differently or fall back; ``unavailable``/``timeout`` →
``degraded``) instead of an exception to remember to catch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from pmsearch.shared.llm import metrics
from pmsearch.shared.llm.client import Message, ModelClient
from pmsearch.shared.llm.errors import ModelError, ModelOutputInvalid, ModelTimeout
from pmsearch.shared.messages import Usage

T = TypeVar("T", bound=BaseModel)
CallResult = Literal["ok", "invalid", "unavailable", "timeout"]

_ERROR_CHARS = 400


@dataclass(frozen=True)
class ModelCall(Generic[T]):
    """What one structured model call came to."""

    value: T | None  # None unless result == "ok"
    result: CallResult
    error: str | None  # readable, e.g. "invalid model output: ..." / "model unavailable: ..."
    seconds: float
    attempts: int  # HTTP completions requested (transport retries and a repair round count)
    prompt_tokens: int
    completion_tokens: int

    @property
    def ok(self) -> bool:
        return self.result == "ok"

    def usage(self) -> Usage:
        return Usage(
            model_calls=self.attempts,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
        )


async def call_model(
    client: ModelClient,
    stage: str,
    messages: list[Message],
    schema_model: type[T],
    *,
    name: str,
    deadline: float | None = None,
    max_tokens: int | None = None,
) -> ModelCall[T]:
    """Ask ``client`` for one ``schema_model`` object and record the call under ``stage``.

    Never raises :class:`ModelError`: an invalid, unavailable or late model is the
    returned call's ``result``. (A schema model that does not forbid extra fields is a
    programming error and still raises ``TypeError``; cancellation propagates.)"""
    started = time.monotonic()
    try:
        reply = await client.structured(
            messages, schema_model, name=name, deadline=deadline, max_tokens=max_tokens
        )
    except ModelError as exc:
        call: ModelCall[T] = ModelCall(
            value=None,
            result=_result_of(exc),
            error=_readable(exc),
            seconds=time.monotonic() - started,
            attempts=exc.attempts,
            prompt_tokens=exc.prompt_tokens,
            completion_tokens=exc.completion_tokens,
        )
    else:
        call = ModelCall(
            value=reply.value,
            result="ok",
            error=None,
            seconds=reply.seconds,
            attempts=reply.attempts,
            prompt_tokens=reply.usage.prompt_tokens,
            completion_tokens=reply.usage.completion_tokens,
        )
    _record(stage, call)
    return call


def _result_of(exc: ModelError) -> CallResult:
    if isinstance(exc, ModelOutputInvalid):
        return "invalid"
    if isinstance(exc, ModelTimeout):
        return "timeout"
    return "unavailable"  # ModelUnavailable, or anything else the endpoint got wrong


def _readable(exc: ModelError) -> str:
    if isinstance(exc, ModelOutputInvalid):
        lines = str(exc.extra.get("errors") or "").splitlines()
        # Schema feedback is a heading and "- where: what" lines; other feedback one line.
        what = "; ".join(line.lstrip("- ") for line in lines[1:]) if len(lines) > 1 else "".join(lines)
        text = f"invalid model output: {exc.detail}" + (f" ({what})" if what else "")
    elif isinstance(exc, ModelTimeout):
        text = f"model timed out: {exc.detail}"
    else:
        text = f"model unavailable: {exc.detail}"
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 1] + "…"


def _record(stage: str, call: ModelCall[Any]) -> None:
    metrics.MODEL_CALLS.labels(stage, call.result).inc()
    metrics.MODEL_SECONDS.labels(stage, call.result).observe(call.seconds)
    metrics.MODEL_TOKENS.labels(stage, "prompt").inc(call.prompt_tokens)
    metrics.MODEL_TOKENS.labels(stage, "completion").inc(call.completion_tokens)
