"""The circuit breaker's states, on a fake clock."""

from __future__ import annotations

from pmsearch.shared.llm.breaker import CircuitBreaker
from tests.fixtures.clock import FakeClock


def test_opens_after_consecutive_failures_and_half_opens_after_reset():
    clock = FakeClock()
    breaker = CircuitBreaker(failures=2, reset_seconds=10, clock=clock)
    breaker.record_failure()
    breaker.record_success()  # success resets the count
    breaker.record_failure()
    assert breaker.state == "closed" and breaker.allow()
    breaker.record_failure()
    assert breaker.state == "open" and not breaker.allow()
    assert breaker.seconds_until_retry() == 10
    clock.now += 10
    assert breaker.state == "half_open"
    assert breaker.allow()  # one trial ...
    assert not breaker.allow()  # ... at a time
    breaker.record_failure()  # the trial failed: open again, for a full period
    assert breaker.state == "open"
    clock.now += 10
    assert breaker.allow()
    breaker.record_success()
    assert breaker.state == "closed" and breaker.allow()


def test_cancelled_trial_frees_the_slot():
    clock = FakeClock()
    breaker = CircuitBreaker(failures=1, reset_seconds=1, clock=clock)
    breaker.record_failure()
    clock.now += 1
    assert breaker.allow()
    breaker.release_trial()
    assert breaker.allow()


# ------------------------------------------------------------------ what counts (issue 9, item 7)
# Against the scripted model over real HTTP: the breaker counts only what says the
# endpoint is unwell, and a process queues its calls past PM_MODEL_MAX_CONCURRENCY.

import asyncio  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import httpx  # noqa: E402
import pytest  # noqa: E402

from pmsearch.shared.llm import ModelClient, ModelTimeout, ModelUnavailable  # noqa: E402
from pmsearch.testing.scripted_model import Reply, Script, ScriptedModel  # noqa: E402
from tests.fixtures.waiting import until  # noqa: E402
from tests.shared.llm.helpers import GOOD, MESSAGES, Pick, settings  # noqa: E402


async def _call(client: ModelClient, **kw):
    return await client.structured(MESSAGES, Pick, name="pick", **kw)


async def test_timeouts_cut_short_by_the_run_deadline_leave_the_breaker_closed(scripted_model: ScriptedModel):
    # A healthy model slower than the run's budget: each run degrades on its own clock,
    # the next run still gets to ask.
    scripted_model.set_script(Script(default=Reply(delay=2, content=GOOD)))
    config = settings(scripted_model.base_url, model_timeout_seconds=30, breaker_failures=2)
    async with ModelClient(config) as client:
        for _ in range(3):
            with pytest.raises(ModelTimeout):
                await _call(client, deadline=time.time() + 0.2)
        assert client.breaker.state == "closed"


async def test_a_timeout_with_the_full_model_timeout_counts(scripted_model: ScriptedModel):
    scripted_model.set_script(Script(default=Reply(hang=5)))
    config = settings(scripted_model.base_url, model_timeout_seconds=0.3, model_retries=0, breaker_failures=2)
    async with ModelClient(config) as client:
        for _ in range(2):
            with pytest.raises(ModelTimeout):
                await _call(client, deadline=time.time() + 10)
        assert client.breaker.state == "open"


@pytest.mark.parametrize("status", [400, 404, 413, 422])
async def test_a_refused_request_leaves_the_breaker_closed(scripted_model: ScriptedModel, status: int):
    scripted_model.set_script(Script(default=Reply(status=status, error="context too long")))
    async with ModelClient(settings(scripted_model.base_url, breaker_failures=2)) as client:
        for _ in range(3):
            with pytest.raises(ModelUnavailable, match=str(status)):
                await _call(client)
        assert client.breaker.state == "closed"


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_5xx_and_429_count(scripted_model: ScriptedModel, status: int):
    scripted_model.set_script(Script(default=Reply(status=status)))
    async with ModelClient(settings(scripted_model.base_url, model_retries=0, breaker_failures=2)) as client:
        for _ in range(2):
            with pytest.raises(ModelUnavailable):
                await _call(client)
        assert client.breaker.state == "open"


async def test_connect_errors_count():
    with ScriptedModel() as model:
        url = model.base_url  # closed once the server stops
    async with ModelClient(settings(url, model_retries=0, breaker_failures=2)) as client:
        for _ in range(2):
            with pytest.raises(ModelUnavailable, match="unreachable"):
                await _call(client)
        assert client.breaker.state == "open"


async def test_a_refused_trial_frees_the_half_open_slot(scripted_model: ScriptedModel):
    now = [0.0]
    breaker = CircuitBreaker(failures=1, reset_seconds=10, clock=lambda: now[0])
    breaker.record_failure()
    now[0] += 10
    scripted_model.set_script(Script(default=Reply(status=400)))
    async with ModelClient(settings(scripted_model.base_url), breaker=breaker) as client:
        with pytest.raises(ModelUnavailable, match="400"):
            await _call(client)
    assert breaker.state == "half_open" and breaker.allow()  # the next call may try


class _Counting(httpx.AsyncBaseTransport):
    """Real HTTP, counting the requests this client has in flight at once."""

    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self.now = self.most = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            response = await self._inner.handle_async_request(request)
            await response.aread()
            return response
        finally:
            self.now -= 1

    async def aclose(self) -> None:
        await self._inner.aclose()


async def test_calls_past_the_concurrency_limit_queue_instead_of_failing(scripted_model: ScriptedModel):
    scripted_model.set_script(Script(default=Reply(delay=0.2, content=GOOD)))
    transport = _Counting()
    config = settings(scripted_model.base_url, model_max_concurrency=2, model_timeout_seconds=10)
    async with ModelClient(config, transport=transport) as client:
        results = await asyncio.gather(*(_call(client, deadline=time.time() + 5) for _ in range(6)))
    assert [r.value.limit for r in results] == [3] * 6
    assert transport.most == 2
    assert client.breaker.state == "closed"


async def test_a_call_that_waits_past_its_deadline_for_a_turn_does_not_count(scripted_model: ScriptedModel):
    # The model answers the first call only when the test says so: the first holds the
    # only turn for as long as the second waits, however slowly this machine runs.
    arrived, answer = threading.Event(), threading.Event()

    def held(body: dict) -> Reply:
        arrived.set()
        answer.wait(30)
        return Reply(content=GOOD)

    scripted_model.set_script(held)
    config = settings(scripted_model.base_url, model_max_concurrency=1, model_timeout_seconds=10, breaker_failures=1)
    async with ModelClient(config) as client:
        first = asyncio.create_task(_call(client))
        try:
            await until(arrived.is_set, "the first call to reach the model")
            with pytest.raises(ModelTimeout, match="no turn"):
                await _call(client, deadline=time.time() + 0.2)
        finally:
            answer.set()
        assert (await first).value.limit == 3
        assert client.breaker.state == "closed"
