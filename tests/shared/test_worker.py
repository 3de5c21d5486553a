"""The worker runtime (pmsearch/shared/worker.py) against a real redis-server: groups, bounded
reads, retries by Redis's delivery count, heartbeats, stale work, stream gauges.

Each test reads its own stream (``pm:test:<uuid>``, group ``g``) with a small test
message, so tests share the session's redis-server without seeing each other."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import replace

import pytest
from prometheus_client import REGISTRY
from pydantic import BaseModel

from pmsearch.shared import streams
from pmsearch.shared.bus import publish
from pmsearch.shared.consumer_group import ConsumerGroup
from pmsearch.shared.errors import ContractError
from pmsearch.shared.settings import ServiceSettings
from pmsearch.shared.streams import dead_letter, final_key, partition, partitions
from pmsearch.shared.worker import Delivery, Policy, Worker
from tests.fixtures.waiting import until as wait_for

GROUP = "g"
FAST = Policy(reclaim_idle_ms=400, heartbeat_ms=100, reclaim_poll_ms=50, max_deliveries=3, block_ms=200)


class Job(BaseModel):
    n: int = 0
    run_id: str | None = None
    deadline: float | None = None


@pytest.fixture
def stream() -> str:
    return f"pm:test:{uuid.uuid4().hex[:10]}"


@pytest.fixture
def client(redis):
    """The test's own client: of one server, or with ``--redis-cluster`` of the cluster."""
    return redis


class Calls:
    """What handlers were called with, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, Delivery]] = []

    def __len__(self) -> int:
        return len(self.seen)


@contextlib.asynccontextmanager
async def running(redis_url: str, stream: str, handle, *, consumer: str = "c1", policy: Policy = FAST, **options):
    worker = Worker(ServiceSettings(redis_url=redis_url), consumer=consumer, policy=policy)
    worker.subscribe(stream, Job, handle, group=GROUP, **options)
    await worker.start()
    try:
        yield worker
    finally:
        await worker.stop()


async def pending(client, stream: str) -> int:
    return sum([(await client.xpending(key, GROUP))["pending"] for key in partitions(stream)])


def home(stream: str) -> str:
    """The key a job without a run is appended to (the stream itself, unless the
    session runs with partitions: ``pytest --stream-partitions``)."""
    return partition(stream, "")


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def recorder(calls: Calls, *, seconds: float = 0.0, fail: bool = False):
    async def handle(job: Job, delivery: Delivery) -> None:
        calls.seen.append((job.n, delivery))
        if seconds:
            await asyncio.sleep(seconds)
        if fail:
            raise RuntimeError("always")

    return handle


# ---------------------------------------------------------------- groups


async def test_entries_published_before_any_group_exists_are_handled(redis_url, client, stream):
    # A group made at "$" (FastStream's) would skip these: after a Redis restart without
    # data, the gateway may publish before the stages have re-created their groups.
    for n in range(3):
        await publish(client, stream, Job(n=n))
    calls = Calls()
    async with running(redis_url, stream, recorder(calls)):
        await wait_for(lambda: _ready(len(calls) == 3))
        await wait_for(lambda: _zero(pending(client, stream)))
    assert sorted(n for n, _ in calls.seen) == [0, 1, 2]


async def test_a_lost_group_is_created_again_and_reading_goes_on(redis_url, client, stream):
    calls = Calls()
    async with running(redis_url, stream, recorder(calls)) as worker:
        await publish(client, stream, Job(n=1))
        await wait_for(lambda: _ready(len(calls) == 1))
        await client.delete(*partitions(stream))  # the stream and its group are gone (a flush, a lost AOF)
        await publish(client, stream, Job(n=2))  # published before the group exists again
        await wait_for(lambda: _ready(len(calls) == 2))
        assert all(not t.done() for t in worker._loops)
    assert [n for n, _ in calls.seen] == [1, 2]


# ---------------------------------------------------------------- bounded reads


async def test_replicas_share_a_backlog_instead_of_one_taking_it_all(redis_url, client, stream):
    calls_a, calls_b = Calls(), Calls()
    most_held = 0
    b_running = asyncio.Event()

    async def handle_a(job: Job, delivery: Delivery) -> None:
        calls_a.seen.append((job.n, delivery))
        # "a" is busy until "b" is up, however long "b" takes to start: it is the whole
        # backlog, still unread, that "a" must not have taken meanwhile.
        await b_running.wait()
        await asyncio.sleep(0.2)

    async def handle_b(job: Job, delivery: Delivery) -> None:
        calls_b.seen.append((job.n, delivery))
        b_running.set()
        await asyncio.sleep(0.2)

    async def watch() -> None:
        nonlocal most_held
        while True:
            info = await client.xpending(home(stream), GROUP)
            most_held = max([most_held] + [int(c["pending"]) for c in info["consumers"]])
            await asyncio.sleep(0.01)

    async with running(redis_url, stream, handle_a, consumer="a", concurrency=2):
        for n in range(20):
            await publish(client, stream, Job(n=n))  # a backlog "a" alone could take
        watcher = asyncio.create_task(watch())
        await wait_for(lambda: len(calls_a) == 2, "a to run all it can")
        async with running(redis_url, stream, handle_b, consumer="b", concurrency=2):
            await wait_for(lambda: _ready(len(calls_a) + len(calls_b) == 20))
            await wait_for(lambda: _zero(pending(client, stream)))
        watcher.cancel()
    assert len(calls_a) >= 5 and len(calls_b) >= 5
    assert most_held <= 2  # a consumer never holds more than it can run


# ---------------------------------------------------------------- retries by delivery count


async def test_an_entry_whose_handler_always_fails_is_dead_lettered_after_max_deliveries(redis_url, client, stream):
    calls = Calls()
    async with running(redis_url, stream, recorder(calls, fail=True)):
        await publish(client, stream, Job(n=7))
        await wait_for(lambda: client.xlen(dead_letter(stream)))
        await wait_for(lambda: _zero(pending(client, stream)))
    assert [d.count for _, d in calls.seen] == [1, 2, 3]
    ((_, fields),) = await client.xrange(dead_letter(stream))
    assert fields[b"deliveries"] == b"3" and fields[b"error"].startswith(b"handler_failed")


async def test_an_entry_delivered_too_often_is_dead_lettered_without_running(redis_url, client, stream):
    # Each earlier delivery went to a consumer that died holding it (OOM, SIGKILL): no
    # exception was ever seen, only Redis's delivery count tells.
    group = ConsumerGroup(client, home(stream), GROUP, "dead")
    await group.ensure()
    entry = (await publish(client, stream, Job(n=1))).decode()
    await client.xreadgroup(GROUP, "dead", {home(stream): ">"})
    for _ in range(FAST.max_deliveries - 1):
        await client.xclaim(home(stream), GROUP, "dead", 0, [entry])  # a takeover counts a delivery
    assert (await group.delivery_counts([entry]))[entry] == FAST.max_deliveries
    calls = Calls()
    async with running(redis_url, stream, recorder(calls)):
        await wait_for(lambda: client.xlen(dead_letter(stream)))
        await wait_for(lambda: _zero(pending(client, stream)))
    assert len(calls) == 0
    ((_, fields),) = await client.xrange(dead_letter(stream))
    assert fields[b"error"].startswith(b"too_many_deliveries")
    assert int(fields[b"deliveries"]) == FAST.max_deliveries + 1


async def test_a_contract_error_is_dead_lettered_at_once(redis_url, client, stream):
    calls = Calls()

    async def refuse(job: Job, delivery: Delivery) -> None:
        calls.seen.append((job.n, delivery))
        raise ContractError("not for this stage")

    async with running(redis_url, stream, refuse):
        await client.xadd(home(stream), {"__data__": b"not json"})
        await publish(client, stream, Job(n=3))
        await wait_for(lambda: _ready_async(client.xlen(dead_letter(stream)), 2))
        await wait_for(lambda: _zero(pending(client, stream)))
    assert [d.count for _, d in calls.seen] == [1]
    errors = sorted(f[b"error"].split(b":")[0] for _, f in await client.xrange(dead_letter(stream)))
    assert errors == [b"contract", b"contract"]


# ---------------------------------------------------------------- heartbeats


async def test_a_long_handler_is_not_taken_over_while_it_heartbeats(redis_url, client, stream):
    calls_a, calls_b = Calls(), Calls()
    async with running(redis_url, stream, recorder(calls_a, seconds=2.0), consumer="a"):
        await publish(client, stream, Job(n=1))
        await wait_for(lambda: _ready(len(calls_a) == 1))
        async with running(redis_url, stream, recorder(calls_b), consumer="b"):
            await wait_for(lambda: _zero(pending(client, stream)), timeout=10)
    assert len(calls_b) == 0 and [d.count for _, d in calls_a.seen] == [1]


async def test_without_heartbeats_the_same_long_handler_would_be_taken_over(redis_url, client, stream, monkeypatch):
    """The control for the test above: it detects a takeover when there is one."""

    async def silent(self, ids):
        return set()

    monkeypatch.setattr(ConsumerGroup, "heartbeat", silent)
    calls_a, calls_b = Calls(), Calls()
    async with running(redis_url, stream, recorder(calls_a, seconds=2.0), consumer="a"):
        await publish(client, stream, Job(n=1))
        await wait_for(lambda: _ready(len(calls_a) == 1))
        async with running(redis_url, stream, recorder(calls_b), consumer="b"):
            await wait_for(lambda: _ready(len(calls_b) == 1), timeout=10)
    assert calls_b.seen[0][1].count == 2


async def test_an_entry_left_by_a_stopped_handler_is_taken_over_by_another_consumer(redis_url, client, stream):
    calls_a, calls_b = Calls(), Calls()
    a = Worker(ServiceSettings(redis_url=redis_url), consumer="a", policy=replace(FAST, shutdown_grace_seconds=0))
    a.subscribe(stream, Job, recorder(calls_a, seconds=30), group=GROUP)
    await a.start()
    await publish(client, stream, Job(n=1))
    await wait_for(lambda: _ready(len(calls_a) == 1))
    async with running(redis_url, stream, recorder(calls_b), consumer="b"):
        await a.stop()  # cut short: cancelled, not acknowledged
        await wait_for(lambda: _ready(len(calls_b) == 1), timeout=10)
        await wait_for(lambda: _zero(pending(client, stream)))
    assert calls_b.seen[0][1].count == 2


# ---------------------------------------------------------------- stale work


async def test_late_work_and_work_for_a_finished_run_are_acknowledged_without_running(redis_url, client, stream):
    calls = Calls()
    finished = f"run-{uuid.uuid4().hex[:8]}"
    await client.set(final_key(finished), "{}", ex=60)
    late_before = metric("pm_worker_dropped_total", stream=stream, reason="deadline_passed")
    async with running(redis_url, stream, recorder(calls)):
        await publish(client, stream, Job(n=1, deadline=time.time() - 1))
        await publish(client, stream, Job(n=2, run_id=finished, deadline=time.time() + 60))
        await publish(client, stream, Job(n=3, run_id=f"run-{uuid.uuid4().hex[:8]}", deadline=time.time() + 60))
        await wait_for(lambda: _ready(len(calls) == 1))
        await wait_for(lambda: _zero(pending(client, stream)))
    assert [n for n, _ in calls.seen] == [3]
    assert metric("pm_worker_dropped_total", stream=stream, reason="deadline_passed") == late_before + 1
    assert metric("pm_worker_dropped_total", stream=stream, reason="run_finished") == 1


async def test_a_subscription_may_keep_late_work(redis_url, client, stream):
    calls = Calls()
    async with running(redis_url, stream, recorder(calls), skip_late=False):
        await publish(client, stream, Job(n=1, deadline=time.time() - 1))
        await wait_for(lambda: _ready(len(calls) == 1))


# ---------------------------------------------------------------- metrics


async def test_stream_lag_and_pending_age_are_reported_for_the_input_stream(redis_url, client, stream):
    release = asyncio.Event()

    async def held(job: Job, delivery: Delivery) -> None:
        await release.wait()

    policy = replace(FAST, report_seconds=0.1)
    async with running(redis_url, stream, held, policy=policy, concurrency=1):
        await publish(client, stream, Job(n=1))
        await publish(client, stream, Job(n=2))
        # One report round sets all three: once it shows the held entry's age, the
        # other two are of the same round.
        await wait_for(lambda: metric("pm_stream_pending_age_seconds", stream=stream) > 0.3, "an old pending entry")
        assert metric("pm_stream_pending", stream=stream) == 1
        assert metric("pm_stream_lag", stream=stream) == 1  # the second waits for a free slot
        release.set()
        await wait_for(lambda: _zero(pending(client, stream)))


# ---------------------------------------------------------------- partitions


@pytest.fixture
def three_partitions(monkeypatch):
    """Streams split in three, as PM_STREAM_PARTITIONS=3 makes them in every process."""
    before = streams.partition_count()
    monkeypatch.setenv("PM_STREAM_PARTITIONS", "3")
    streams.set_partitions(3)
    yield
    streams.set_partitions(before)


def runs_on_each_partition(stream: str, per_partition: int) -> dict[str, list[str]]:
    """Run ids whose messages land on each partition of ``stream``, ``per_partition`` each."""
    found: dict[str, list[str]] = {key: [] for key in partitions(stream)}
    n = 0
    while any(len(ids) < per_partition for ids in found.values()):
        run_id = f"run-{n}"
        ids = found[partition(stream, run_id)]
        if len(ids) < per_partition:
            ids.append(run_id)
        n += 1
    return found


async def test_a_partitioned_stream_is_read_in_every_partition_once_each_and_a_run_in_order(
    three_partitions, redis_url, client, stream
):
    runs = [run_id for ids in runs_on_each_partition(stream, 3).values() for run_id in ids]
    for n in range(3):  # each run's messages published in order n = 0, 1, 2
        for run_id in runs:
            await publish(client, stream, Job(n=n, run_id=run_id))
    assert [await client.xlen(key) for key in partitions(stream)] == [9, 9, 9]
    seen: list[tuple[str, int]] = []

    async def handle(job: Job, delivery: Delivery) -> None:
        seen.append((job.run_id or "", job.n))

    async with running(redis_url, stream, handle, concurrency=1):
        await wait_for(lambda: _ready(len(seen) == 27))
        await wait_for(lambda: _zero(pending(client, stream)))
    assert sorted(seen) == sorted((r, n) for r in runs for n in range(3))
    assert all([n for r, n in seen if r == run_id] == [0, 1, 2] for run_id in runs)


async def test_a_stream_s_partitions_share_its_handler_slots(three_partitions, redis_url, client, stream):
    runs = [ids[0] for ids in runs_on_each_partition(stream, 1).values()]
    running_now, most, handled = 0, 0, 0

    async def handle(job: Job, delivery: Delivery) -> None:
        nonlocal running_now, most, handled
        handled += 1
        running_now += 1
        most = max(most, running_now)
        await asyncio.sleep(0.05)
        running_now -= 1

    for n in range(8):
        for run_id in runs:
            await publish(client, stream, Job(n=n, run_id=run_id))
    async with running(redis_url, stream, handle, concurrency=2):
        await wait_for(lambda: _ready(handled == 24))
        await wait_for(lambda: _zero(pending(client, stream)))
    assert most == 2  # both slots used, never a third: not two per partition


async def test_a_backlog_in_one_partition_does_not_hold_back_another(three_partitions, redis_url, client, stream):
    busy, other, _ = (ids[0] for ids in runs_on_each_partition(stream, 1).values())
    order: list[str] = []

    async def handle(job: Job, delivery: Delivery) -> None:
        order.append(job.run_id or "")
        await asyncio.sleep(0.02)

    for n in range(20):
        await publish(client, stream, Job(n=n, run_id=busy))
    await publish(client, stream, Job(n=0, run_id=other))  # after the whole backlog
    async with running(redis_url, stream, handle, concurrency=1):
        await wait_for(lambda: _ready(len(order) == 21))
    # Read in turns, one slot between three partitions: the latecomer waits for a few
    # of the backlog's entries, not for all twenty.
    assert order.index(other) <= FAST.read_count


def test_heartbeats_must_come_twice_per_reclaim_idle_time():
    with pytest.raises(ValueError):
        Policy(reclaim_idle_ms=1000, heartbeat_ms=600)
    with pytest.raises(ValueError):
        ServiceSettings(worker_reclaim_idle_seconds=1.0, worker_heartbeat_seconds=0.6)


async def _ready(value: bool) -> bool:
    return value


async def _ready_async(awaitable, at_least: int) -> bool:
    return (await awaitable) >= at_least


async def _zero(awaitable) -> bool:
    return (await awaitable) == 0
