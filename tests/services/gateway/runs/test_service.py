"""Waiting for and streaming a run (pmsearch/services/gateway/runs/service.py), against a real Redis."""

from __future__ import annotations

import asyncio
import secrets
import time
import uuid

import pytest

from pmsearch.services.gateway.repository import GatewayRepository
from pmsearch.services.gateway.runs.service import RunService
from pmsearch.services.gateway.searcher import Searcher
from pmsearch.shared.messages import ProgressEvent, RunMeta, RunResult
from pmsearch.shared.runstore import RunStore, owner_key
from pmsearch.shared.runstore.store import PUBLISHED
from pmsearch.shared.settings import GatewaySettings
from tests.fixtures.waiting import until


class SwallowingStore(RunStore):
    """A store whose blocking read swallows the first cancellation that lands in it and
    returns as if it had timed out, as redis-py 8 can."""

    swallowed = 0

    async def read_progress(self, *args, **kwargs):
        try:
            return await super().read_progress(*args, **kwargs)
        except asyncio.CancelledError:
            if self.swallowed:
                raise
            self.swallowed += 1
            return []


def service(redis) -> RunService:
    settings = GatewaySettings(admin_token="a" * 32, scope_key=secrets.token_urlsafe(32))
    runs = RunService(Searcher(redis, settings), GatewayRepository(redis))
    runs.store = SwallowingStore(redis)
    return runs


def unfinished_run() -> RunMeta:
    now = time.time()
    return RunMeta(
        run_id=uuid.uuid4().hex, tenant_id="acme", principal="alice", question="when?", scope_token="tok",
        created_at=now, deadline=now + 60, max_steps=4, key_id="k1", mailboxes=["alice"],
    )


async def _consume(events) -> None:
    async for _ in events:
        pass


@pytest.mark.parametrize("how", ["wait", "events"])
async def test_a_wait_ends_when_cancelled_even_if_redis_py_swallows_the_cancellation(redis, how) -> None:
    runs, meta = service(redis), unfinished_run()
    already = await blocked_reads(redis)
    task = asyncio.create_task(runs.wait(meta) if how == "wait" else _consume(runs.events(meta, None)))
    # Redis holds the read: the cancellation lands while redis-py waits for its reply
    # (earlier, inside redis-py's own sending, it may be swallowed there instead).
    await until(lambda: _more(blocked_reads(redis), already), "the wait's blocking read")
    task.cancel()
    # Far short of the run's 60 s, far past what ending takes.
    done, _ = await asyncio.wait({task}, timeout=10)
    if not done:  # the bug: the loop went on towards the run's deadline; stop it for good
        task.cancel()
        await asyncio.wait({task}, timeout=10)
    assert runs.store.swallowed == 1
    assert task in done and task.cancelled()


async def blocked_reads(redis) -> int:
    """Clients blocked in XREAD, on the one server or on every node of a cluster."""
    lists = [await redis.client_list(target_nodes=n) for n in redis.get_nodes()] if hasattr(redis, "get_nodes") \
        else [await redis.client_list()]
    return sum(1 for clients in lists for c in clients if c["cmd"] == "xread" and "b" in c["flags"])


async def _more(count, than: int) -> bool:
    return await count > than


class CountingStore(RunStore):
    reads = 0

    async def published_result(self, run_id):
        self.reads += 1
        return await super().published_result(run_id)


def counting(redis) -> RunService:
    runs = service(redis)
    runs.store = CountingStore(redis)
    return runs


async def _progress_then_result(store: RunStore, meta: RunMeta, *, announce: bool) -> None:
    for step in range(20):  # a busy run: step and evidence entries, none of them the end
        await store.add_progress(meta.run_id, ProgressEvent(event="step", payload={"step": step}), meta.deadline)
        await asyncio.sleep(0.01)
    result = RunResult(run_id=meta.run_id, tenant_id=meta.tenant_id, outcome="insufficient_evidence")
    await store.store_result(result)
    if announce:
        await store.announce(result, meta.deadline, "1-0")


@pytest.mark.parametrize("how", ["wait", "events"])
async def test_a_wait_reads_the_result_when_done_is_announced_not_at_every_progress_entry(redis, how) -> None:
    runs, meta = counting(redis), unfinished_run()
    writer = asyncio.create_task(_progress_then_result(RunStore(redis), meta, announce=True))
    if how == "wait":
        result = await asyncio.wait_for(runs.wait(meta), 5)
    else:
        events = [e async for e in runs.events(meta, None)]
        result = RunResult.model_validate_json(events[-1]["data"])
    await writer
    assert result.outcome == "insufficient_evidence"
    assert runs.store.reads <= 3  # the start, the announcement, perhaps one quiet read


@pytest.mark.parametrize("how", ["wait", "events"])
async def test_a_result_stored_but_not_announced_is_not_read_until_it_is(redis, how) -> None:
    """The verifier stored a result and died before announcing it (or, with Sentinel, no
    replica holds it yet): a client waits; the retry's announcement ends the wait."""
    runs, meta, store = counting(redis), unfinished_run(), RunStore(redis)
    await _progress_then_result(store, meta, announce=False)

    async def outcome() -> RunResult:
        if how == "wait":
            return await runs.wait(meta)
        events = [e async for e in runs.events(meta, None)]
        return RunResult.model_validate_json(events[-1]["data"])

    waiting = asyncio.create_task(outcome())
    await asyncio.sleep(1.5)
    assert not waiting.done() and await runs.result(meta.run_id) is None
    assert await store.result(meta.run_id) is not None  # stored all along
    await store.announce(await store.result(meta.run_id), meta.deadline, "1-0")
    result = await asyncio.wait_for(waiting, 10)
    assert result.outcome == "insufficient_evidence"


async def test_an_announcement_cut_off_before_its_wake_up_is_found_by_a_quiet_read(redis) -> None:
    """Marked published, but the ``done`` entry never written: the wait still ends well
    before the run's deadline (60 s away)."""
    runs, meta, store = counting(redis), unfinished_run(), RunStore(redis)
    await _progress_then_result(store, meta, announce=False)
    await redis.set(owner_key(meta.run_id), b"1-0" + PUBLISHED)
    result = await asyncio.wait_for(runs.wait(meta), 20)
    assert result.outcome == "insufficient_evidence"



async def test_a_run_is_published_only_once_its_idempotency_mark_is_set(redis) -> None:
    """The key's started mark comes before the publication: when Redis refuses the mark,
    the run is neither published nor left recorded (and the key is left free)."""
    from datetime import UTC, datetime

    from redis.exceptions import ResponseError

    from pmsearch.services.gateway.runs.idempotency import Claim
    from pmsearch.services.gateway.schemas import ApiKeyRecord
    from pmsearch.services.gateway.search.schemas import SearchRequest
    from pmsearch.shared.streams import RUNS, partitions

    runs = service(redis)

    async def refused(*args) -> None:
        raise ResponseError("ERR refused")

    runs.requests.mark_started = refused
    record = ApiKeyRecord(key_id=uuid.uuid4().hex, tenant_id="acme", principal="alice", permissions=["search:agentic"],
                          mailboxes=["alice"], created_at=datetime.now(UTC))
    before = [await redis.xrevrange(key, count=1) for key in partitions(RUNS)]
    listed = await redis.zrange("pm:index:runs:acme", 0, -1)
    watched = await redis.zrange("pm:watch:deadlines", 0, -1)
    with pytest.raises(ResponseError):
        await runs.start(record, SearchRequest(query="when?", mode="agentic"), "retry-me")
    assert [await redis.xrevrange(key, count=1) for key in partitions(RUNS)] == before  # nothing published
    assert await redis.zrange("pm:index:runs:acme", 0, -1) == listed  # nor left recorded
    assert await redis.zrange("pm:watch:deadlines", 0, -1) == watched
    assert await service(redis).requests.reserve(record.key_id, "retry-me", Claim(run_id="r" * 32, request="d")) is None
