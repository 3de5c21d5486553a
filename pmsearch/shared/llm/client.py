"""The one model client: OpenAI-compatible chat completions over httpx.

Used by the planner and the answerer only; the verifier must never import this package.

``ModelClient.structured`` asks for one object of a pydantic schema model and returns
it validated by code. Failure modes are mapped for the callers, which turn
:class:`ModelUnavailable` (and its :class:`ModelTimeout`) into the ``degraded`` outcome:

- transport trouble (connect errors, timeouts, 5xx, 429): retried with jittered backoff
  within the call's time;
- the circuit breaker counts only what says the endpoint is unwell: 5xx, 429, a
  connection that fails, and a timeout of an attempt that had the full
  ``model_timeout_seconds``. A timeout because the run's deadline left less time, a
  4xx about this request, or a malformed body prove nothing about the endpoint;
- an open breaker: refused at once, without touching the network;
- at most ``model_max_concurrency`` requests of the process are in flight; more wait
  their turn (inside their own time), so overload queues instead of timing out at the
  endpoint;
- an invalid object: asked again once with the validation errors, then
  :class:`ModelOutputInvalid`.

Whatever the outcome, the call's spending is kept: on the result, or on the error
(``attempts`` and tokens, see :mod:`pmsearch.shared.llm.errors`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx
from pydantic import BaseModel, ConfigDict
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)

from pmsearch.shared.llm import metrics
from pmsearch.shared.llm.breaker import CircuitBreaker
from pmsearch.shared.llm.dialects import Dialect, reply_text, response_fields, schema_of
from pmsearch.shared.llm.errors import ModelError, ModelOutputInvalid, ModelTimeout, ModelUnavailable
from pmsearch.shared.llm.parsing import OutputError, parse_structured
from pmsearch.shared.settings import ModelSettings

T = TypeVar("T", bound=BaseModel)
Message = dict[str, Any]

_MIN_ATTEMPT_SECONDS = 0.05  # below this a request cannot succeed: call it a timeout
# An attempt that had this much less than the full model timeout was cut short by the
# caller's clock (its deadline, or its wait for a turn), not by the endpoint.
_FULL_TIMEOUT_SLACK_SECONDS = 0.25


class ModelUsage(BaseModel):
    """Tokens one structured call spent, summed over its attempts."""

    model_config = ConfigDict(extra="forbid")

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, usage: Any) -> None:
        if isinstance(usage, dict):
            self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.completion_tokens += int(usage.get("completion_tokens") or 0)


@dataclass(frozen=True)
class StructuredResult(Generic[T]):
    value: T
    usage: ModelUsage
    raw_text: str
    attempts: int  # HTTP completions requested: transport retries and the repair round count
    seconds: float


@dataclass
class _Tally:
    """What one structured call has spent so far."""

    requests: int = 0
    usage: ModelUsage = field(default_factory=ModelUsage)


class _Transient(Exception):
    """A failure worth retrying: connect error, timeout, 5xx, 429."""

    def __init__(self, detail: str, *, timeout: bool = False) -> None:
        super().__init__(detail)
        self.timeout = timeout


# Transport failures that say the endpoint is unreachable or broke the connection; a
# timeout is judged separately (by how long the attempt was allowed).
_ENDPOINT_FAILURES = (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError, httpx.UnsupportedProtocol)


class ModelClient:
    """One per process and endpoint: it owns the connection pool and the breaker."""

    def __init__(
        self,
        settings: ModelSettings,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        self.settings = settings
        self.dialect: Dialect = settings.model_output
        self.breaker = breaker or CircuitBreaker(
            settings.breaker_failures, settings.breaker_reset_seconds
        )
        metrics.watch_breaker(self.breaker)
        # Per process (one client per process and endpoint): requests in flight.
        self._turns = asyncio.Semaphore(settings.model_max_concurrency)
        headers = {"Content-Type": "application/json"}
        if settings.model_api_key is not None:
            headers["Authorization"] = f"Bearer {settings.model_api_key.get_secret_value()}"
        self._http = httpx.AsyncClient(
            base_url=settings.model_base_url.rstrip("/") + "/",
            headers=headers,
            transport=transport,
            # Per-attempt totals are enforced with asyncio.timeout below; these bound
            # the individual phases so a silent socket is noticed early.
            timeout=httpx.Timeout(
                settings.model_timeout_seconds, connect=settings.model_connect_timeout_seconds
            ),
        )

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def structured(
        self,
        messages: list[Message],
        schema_model: type[T],
        *,
        name: str,
        max_tokens: int | None = None,
        deadline: float | None = None,
        temperature: float | None = None,
    ) -> StructuredResult[T]:
        """One object of ``schema_model``, validated. ``deadline`` (Unix seconds, the
        run's) caps the whole call, retries included."""
        if schema_model.model_config.get("extra") != "forbid":
            raise TypeError(f"{schema_model.__name__} must set extra='forbid'")
        started = time.monotonic()
        # One clock for the whole call: the run's deadline and the client's own timeout,
        # whichever comes first.
        ends_at = started + self.settings.model_timeout_seconds
        if deadline is not None:
            ends_at = min(ends_at, started + (deadline - time.time()))

        body_base: dict[str, Any] = {
            "model": self.settings.agent_model,
            "max_tokens": max_tokens or self.settings.model_max_tokens,
            "temperature": (
                self.settings.model_temperature if temperature is None else temperature
            ),
            "stream": False,
            **response_fields(self.dialect, name, schema_of(schema_model)),
        }
        tally = _Tally()
        try:
            return await self._rounds(list(messages), schema_model, name, body_base, ends_at, started, tally)
        except ModelError as exc:
            exc.spent(tally.requests, tally.usage.prompt_tokens, tally.usage.completion_tokens)
            raise

    async def _rounds(
        self,
        convo: list[Message],
        schema_model: type[T],
        name: str,
        body_base: dict[str, Any],
        ends_at: float,
        started: float,
        tally: _Tally,
    ) -> StructuredResult[T]:
        """Ask, and once more with the validation errors if the reply does not fit."""
        for attempt in (1, 2):
            data = await self._post({**body_base, "messages": convo}, ends_at, tally)
            tally.usage.add(data.get("usage"))
            raw = reply_text(self.dialect, _first_message(data))
            try:
                value = parse_structured(raw, schema_model)
            except OutputError as exc:
                if attempt == 2:
                    raise ModelOutputInvalid(
                        f"model output for {name!r} failed validation twice",
                        errors=exc.feedback,
                    ) from exc
                # One repair round: show the model its reply and what was wrong with it.
                convo = [
                    *convo,
                    {"role": "assistant", "content": raw[:4000]},
                    {
                        "role": "user",
                        "content": exc.feedback
                        + "\nReply again with only one JSON object that matches the schema.",
                    },
                ]
                continue
            return StructuredResult(
                value=value,
                usage=tally.usage,
                raw_text=raw,
                attempts=tally.requests,
                seconds=time.monotonic() - started,
            )
        raise AssertionError("unreachable")

    async def _post(self, body: dict[str, Any], ends_at: float, tally: _Tally) -> dict[str, Any]:
        """POST chat/completions with retries inside the time left; the parsed body."""
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.settings.model_retries + 1)
            | (lambda rs: _remaining(ends_at) < _MIN_ATTEMPT_SECONDS),
            wait=_clipped(
                wait_random_exponential(
                    multiplier=self.settings.model_retry_wait_seconds,
                    max=self.settings.model_retry_wait_max_seconds,
                ),
                ends_at,
            ),
            retry=retry_if_exception(lambda e: isinstance(e, _Transient)),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    return await self._attempt(body, ends_at, tally)
        except _Transient as exc:
            if exc.timeout:
                raise ModelTimeout(str(exc)) from exc
            raise ModelUnavailable(str(exc)) from exc
        raise AssertionError("unreachable")

    async def _attempt(self, body: dict[str, Any], ends_at: float, tally: _Tally) -> dict[str, Any]:
        if _remaining(ends_at) < _MIN_ATTEMPT_SECONDS:
            raise ModelTimeout("no time left for a model call before the deadline")
        if self.breaker.state == "open":
            raise self._circuit_open()  # without queueing for a turn
        try:
            async with asyncio.timeout(_remaining(ends_at)):
                await self._turns.acquire()
        except TimeoutError:
            # The process's other calls held every turn: overload here, not at the endpoint.
            raise ModelTimeout("no turn for a model call before the deadline (PM_MODEL_MAX_CONCURRENCY)") from None
        try:
            return await self._send(body, ends_at, tally)
        finally:
            self._turns.release()

    def _circuit_open(self) -> ModelUnavailable:
        return ModelUnavailable(
            "model circuit is open", retry_after_seconds=round(self.breaker.seconds_until_retry(), 3)
        )

    async def _send(self, body: dict[str, Any], ends_at: float, tally: _Tally) -> dict[str, Any]:
        """One request, holding a turn; tells the breaker only what is the endpoint's doing."""
        allowed = _remaining(ends_at)
        if allowed < _MIN_ATTEMPT_SECONDS:
            raise ModelTimeout("no time left for a model call before the deadline")
        admitted = self.breaker.admit()
        if admitted is None:
            raise self._circuit_open()
        neutral = self.breaker.release_trial if admitted == "half_open" else _nothing
        full_length = allowed >= self.settings.model_timeout_seconds - _FULL_TIMEOUT_SLACK_SECONDS
        tally.requests += 1
        try:
            async with asyncio.timeout(allowed):
                response = await self._http.post("chat/completions", json=body)
        except (TimeoutError, httpx.TimeoutException) as exc:
            if isinstance(exc, httpx.ConnectTimeout) or full_length:
                self.breaker.record_failure()
            else:
                neutral()  # the caller's clock ran out, not the endpoint's
            raise _Transient(f"model call timed out after {allowed:.2f}s", timeout=True) from exc
        except _ENDPOINT_FAILURES as exc:
            self.breaker.record_failure()
            raise _Transient(f"model endpoint unreachable: {type(exc).__name__}") from exc
        except httpx.RequestError as exc:
            neutral()  # a client-side problem, not the endpoint's
            raise _Transient(f"model request failed: {type(exc).__name__}") from exc
        except BaseException:
            # Cancelled by the caller: neither a success nor the endpoint's fault, but a
            # half-open trial slot must not stay taken.
            neutral()
            raise
        status = response.status_code
        if status == 429 or status >= 500:
            self.breaker.record_failure()
            raise _Transient(f"model endpoint answered {status}")
        if status >= 400:
            # Bad key, unknown model, a dialect or prompt the server refuses: retrying
            # cannot help and the run should degrade, but the endpoint answered.
            neutral()
            raise ModelUnavailable(
                f"model endpoint refused the request ({status})", upstream=_snippet(response)
            )
        try:
            data = response.json()
            _first_message(data)
        except (ValueError, ModelError) as exc:
            neutral()
            raise ModelUnavailable("model endpoint sent a malformed completion") from exc
        self.breaker.record_success()
        return data


def _nothing() -> None:
    pass


def _first_message(data: Any) -> dict[str, Any]:
    try:
        message = data["choices"][0]["message"]
    except (KeyError, IndexError, TypeError) as exc:
        raise ModelError("completion without choices[0].message") from exc
    if not isinstance(message, dict):
        raise ModelError("completion message is not an object")
    return message


def _remaining(ends_at: float) -> float:
    return ends_at - time.monotonic()


def _clipped(wait: Callable[[RetryCallState], float], ends_at: float):
    """Never sleep past the deadline: shorten the jittered backoff to the time left."""

    def clipped(rs: RetryCallState) -> float:
        return max(0.0, min(wait(rs), _remaining(ends_at)))

    return clipped


def _snippet(response: httpx.Response, limit: int = 300) -> str:
    try:
        return response.text[:limit]
    except Exception:  # noqa: BLE001 - a body we cannot decode says nothing useful
        return ""
