"""The run store against a real redis-server: one TTL policy, one serialisation, the
run index, and every stage's methods under that stage's own Redis user."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime

import pytest
import redis as blocking_redis
import redis.asyncio as aioredis

from pmsearch.cli.acl import rules
from pmsearch.shared import streams
from pmsearch.shared.bus import connect
from pmsearch.shared.messages import (
    EvidenceMessage,
    ProgressEvent,
    RunMeta,
    RunResult,
    RunSnapshot,
    Trace,
    Usage,
)
from pmsearch.shared.runstore import (
    EVIDENCE_KEEP_SECONDS,
    INDEX_ALL,
    WORK_MARGIN_SECONDS,
    RunReader,
    RunStore,
    index_key,
    retention_seconds,
)
from pmsearch.shared.settings import ServiceSettings
from tests.fixtures.waiting import until


def run_id() -> str:
    return uuid.uuid4().hex


def meta(run: str, *, tenant: str = "acme", created_at: float | None = None, deadline: float | None = None) -> RunMeta:
    now = time.time() if created_at is None else created_at
    return RunMeta(
        run_id=run, tenant_id=tenant, principal="alice", question="when?", scope_token="tok",
        created_at=now, deadline=deadline or now + 30, max_steps=4, key_id="k1", mailboxes=["alice"],
    )


def message(message_id: str, body: str = "The claim was accepted.") -> EvidenceMessage:
    return EvidenceMessage(
        message_id=message_id, tenant_id="acme", thread_id="t1", mailbox="alice", sender="anna@x.example",
        date=datetime(2025, 1, 2, tzinfo=UTC), subject="Claim", body=body, snippet="accepted",
    )


def result(run: str, outcome: str = "answered") -> RunResult:
    return RunResult(run_id=run, tenant_id="acme", outcome=outcome, finished_at=time.time())


async def test_admit_keeps_the_record_for_the_retention_and_indexes_the_run(redis) -> None:
    store, run = RunStore(redis, retention_days=2), run_id()
    record = meta(run, tenant=f"t-{run[:6]}")
    await store.admit(record, watch_at=record.deadline + 1.5)
    assert await store.meta(run) == record
    assert 2 * 86_400 - 5 <= await redis.ttl(streams.meta_key(run)) <= 2 * 86_400
    assert await redis.zscore(streams.WATCHDOG, run) == pytest.approx(record.deadline + 1.5)
    assert await redis.zscore(index_key(record.tenant_id), run) == pytest.approx(record.created_at)
    assert await redis.zscore(INDEX_ALL, run) == pytest.approx(record.created_at)


async def test_the_index_forgets_runs_older_than_the_retention(redis) -> None:
    store, tenant = RunStore(redis, retention_days=1), f"t-{uuid.uuid4().hex[:6]}"
    old, new = meta(run_id(), tenant=tenant, created_at=time.time() - 2 * 86_400), meta(run_id(), tenant=tenant)
    await store.admit(old, watch_at=old.deadline)
    await store.admit(new, watch_at=new.deadline)
    page = await store.index_page(tenant, newest=time.time(), oldest=0, start=0, count=10)
    assert [r for r, _ in page] == [new.run_id]


async def test_the_result_is_kept_for_the_retention_and_stored_once(redis) -> None:
    store, run = RunStore(redis, retention_days=30), run_id()
    first = result(run)
    assert await store.store_result(first) is True
    assert await store.store_result(result(run, "degraded")) is False
    assert await store.result(run) == first and await store.finished(run)
    assert retention_seconds(30) - 5 <= await redis.ttl(streams.final_key(run)) <= retention_seconds(30)


async def test_working_keys_live_until_the_deadline_plus_the_margin(redis) -> None:
    store, run = RunStore(redis), run_id()
    deadline = time.time() + 30
    await store.add_evidence(run, 1, {"m1": message("m1")}, deadline)
    async with store.held_state(run, RunMeta) as held:
        held.save(meta(run), RunSnapshot(), deadline)
    await store.add_progress(run, ProgressEvent(event="step", payload={"step": 1}), deadline)
    keys = (streams.progress_key(run), streams.state_key(run), streams.snapshot_key(run))
    for key in keys:
        assert 30 + WORK_MARGIN_SECONDS - 5 <= await redis.ttl(key) <= 31 + WORK_MARGIN_SECONDS, key


async def test_evidence_lives_hours_until_the_result_then_the_working_margin(redis) -> None:
    # A draft written before the deadline is verified against its evidence however late
    # the verifier reads it; once the result is stored, the bodies need not stay.
    store, run = RunStore(redis), run_id()
    deadline = time.time() + 30
    await store.add_evidence(run, 1, {"m1": message("m1")}, deadline)
    assert 30 + EVIDENCE_KEEP_SECONDS - 5 <= await redis.ttl(streams.evidence_key(run)) <= 31 + EVIDENCE_KEEP_SECONDS
    await store.release_kept(run)
    assert WORK_MARGIN_SECONDS - 5 <= await redis.ttl(streams.evidence_key(run)) <= WORK_MARGIN_SECONDS


async def test_the_snapshot_of_a_run_handed_on_lives_as_long_as_its_evidence_until_the_result(redis) -> None:
    # The watchdog reads it to wait for the run's draft (pmsearch/services/gateway/watchdog.py).
    store, run = RunStore(redis), run_id()
    deadline = time.time() + 30
    async with store.held_state(run, RunMeta) as held:
        held.save(meta(run), RunSnapshot(handed_off_at=time.time()), deadline)
    assert 30 + EVIDENCE_KEEP_SECONDS - 5 <= await redis.ttl(streams.snapshot_key(run)) <= 31 + EVIDENCE_KEEP_SECONDS
    assert await redis.ttl(streams.state_key(run)) <= 31 + WORK_MARGIN_SECONDS
    await store.release_kept(run)
    assert WORK_MARGIN_SECONDS - 5 <= await redis.ttl(streams.snapshot_key(run)) <= WORK_MARGIN_SECONDS


async def test_evidence_is_stored_once_and_announced_once(redis) -> None:
    store, run = RunStore(redis), run_id()
    deadline = time.time() + 30
    assert await store.add_evidence(run, 1, {"m1": message("m1")}, deadline) == 1
    assert await store.add_evidence(run, 2, {"m1": message("m1", "changed"), "m2": message("m2")}, deadline) == 1
    found = await store.evidence(run)
    assert found["m1"].body == "The claim was accepted."  # the first copy stays
    events = [e for _, e in await store.read_progress(run, "0-0", block_ms=None)]
    assert [(e.event, e.payload["message"]["message_id"]) for e in events] == [("evidence", "m1"), ("evidence", "m2")]


async def test_both_readers_skip_an_unreadable_evidence_entry_and_keep_the_order_asked(redis, sync_redis) -> None:
    store, run = RunStore(redis), run_id()
    await store.add_evidence(run, 1, {"m1": message("m1"), "m2": message("m2")}, time.time() + 30)
    await redis.hset(streams.evidence_key(run), "mbroken", b"{not json")
    assert [m.message_id for m in await store.evidence_list(run, ["m2"])] == ["m2", "m1"]
    assert [m.message_id for m in RunReader(sync_redis).evidence_list(run, ["m2"])] == ["m2", "m1"]


async def test_a_broken_progress_entry_reads_as_none_but_advances_the_reader(redis) -> None:
    store, run = RunStore(redis), run_id()
    await redis.xadd(streams.progress_key(run), {"__data__": b"not json"})
    await store.add_progress(run, ProgressEvent(event="step", payload={"step": 1}), None)
    entries = await store.read_progress(run, "0-0", block_ms=None)
    assert [e is None for _, e in entries] == [True, False]
    assert await store.read_progress(run, entries[-1][0], block_ms=None) == []


class _CountingPipelines:
    """A Redis client that counts the pipelines opened through it: each is one try at
    the run's lock (or, once taken, its release)."""

    def __init__(self, inner: aioredis.Redis) -> None:
        self._inner, self.pipelines = inner, 0

    def pipeline(self, *args, **kwargs):
        self.pipelines += 1
        return self._inner.pipeline(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


async def test_the_lock_holds_off_a_second_holder_until_released(redis) -> None:
    run = run_id()
    b_redis = _CountingPipelines(redis)
    order: list[str] = []
    a_in, a_may_leave = asyncio.Event(), asyncio.Event()

    async def hold(store: RunStore, name: str, leave: asyncio.Event | None = None) -> None:
        async with store.held_state(run, RunMeta):
            order.append(f"{name} in")
            if leave is not None:
                a_in.set()
                await leave.wait()
            order.append(f"{name} out")

    first = asyncio.create_task(hold(RunStore(redis), "a", a_may_leave))
    await a_in.wait()
    second = asyncio.create_task(hold(RunStore(b_redis), "b"))
    # b's second pipeline opens only once its first is answered: it has asked for the
    # lock at least once while a holds it.
    await until(lambda: b_redis.pipelines >= 2, "b to try the lock")
    assert order == ["a in"]
    a_may_leave.set()
    await asyncio.gather(first, second)
    assert order == ["a in", "a out", "b in", "b out"]
    assert not await redis.exists(streams.lock_key(run))


async def test_a_held_state_is_read_with_the_lock_and_saved_with_its_release(redis) -> None:
    store, run, deadline = RunStore(redis), run_id(), time.time() + 30
    record = meta(run)
    assert await store.create_state(run, record, deadline)
    changed = record.model_copy(update={"question": "changed"})
    async with store.held_state(run, RunMeta) as held:
        assert held.state == record
        held.save(changed, RunSnapshot(usage=Usage(steps=2)), deadline)
        assert await store.state(run, RunMeta) == record  # written at the release, not before
    assert await store.state(run, RunMeta) == changed
    assert (await store.snapshot(run)).usage.steps == 2
    assert not await redis.exists(streams.lock_key(run))


async def test_a_second_holder_reads_what_the_first_saved(redis) -> None:
    store, run, deadline = RunStore(redis), run_id(), time.time() + 30
    assert await store.create_state(run, meta(run), deadline)

    async def bump(word: str) -> None:
        async with store.held_state(run, RunMeta) as held:
            await asyncio.sleep(0.05)
            held.save(held.state.model_copy(update={"question": held.state.question + word}), RunSnapshot(), deadline)

    await asyncio.gather(bump(" a"), bump(" b"))
    assert (await store.state(run, RunMeta)).question.endswith((" a b", " b a"))


async def test_the_lock_release_leaves_a_lock_taken_over_after_expiry(redis) -> None:
    store, run = RunStore(redis), run_id()
    async with store.held_state(run, RunMeta, lease_ms=50):
        await asyncio.sleep(0.1)  # expired; another holder takes it
        assert await redis.set(streams.lock_key(run), "other", nx=True, px=5_000)
    assert await redis.get(streams.lock_key(run)) == b"other"


async def test_cancelling_keeps_the_records_ttl(redis) -> None:
    store, run = RunStore(redis, retention_days=1), run_id()
    record = meta(run)
    await store.admit(record, watch_at=record.deadline)
    cancelled = await store.mark_cancelled(record, 123.0)
    assert (await store.meta(run)).cancelled_at == 123.0 == cancelled.cancelled_at
    assert 86_400 - 5 <= await redis.ttl(streams.meta_key(run)) <= 86_400


async def test_the_finishing_steps_announce_the_stored_result_once(redis) -> None:
    store, run = RunStore(redis), run_id()
    assert await store.claim_owner(run, "1-0", 10_000)
    assert not await store.claim_owner(run, "2-0", 10_000)
    assert await store.owner(run) == ("1-0", False)
    await store.store_result(result(run, "degraded"))
    await store.announce(result(run, "degraded"), time.time() + 30, "1-0")
    assert await store.owner(run) == ("1-0", True)
    assert [e.event for _, e in await store.read_progress(run, "0-0", block_ms=None)] == ["done"]


# ---------------------------------------------------------------- each stage's own Redis user


STAGES = ("gateway", "planner", "searcher", "answerer", "verifier")


@pytest.fixture(scope="module")
def stage_settings(redis_url: str, loopback_cluster) -> dict[str, ServiceSettings]:
    """Each stage's connection settings as its own ACL user: the shipped users of the
    cluster's nodes, or the same rules set up on the session's server."""
    if loopback_cluster is not None:
        passwords = loopback_cluster.secrets.passwords
    else:
        admin = blocking_redis.Redis.from_url(redis_url)
        passwords = {user: f"{user}-store-test" for user in STAGES}
        for user in STAGES:
            admin.execute_command("ACL", "SETUSER", user, "reset", *rules(user, passwords[user]))
        admin.close()
    return {
        user: ServiceSettings(redis_url=redis_url, redis_username=user, redis_password=passwords[user])
        for user in STAGES
    }


async def test_every_stage_runs_its_part_of_a_run_under_its_own_acl_user(stage_settings) -> None:
    clients = {user: connect(settings) for user, settings in stage_settings.items()}
    store = {user: RunStore(c) for user, c in clients.items()}
    run, deadline = run_id(), time.time() + 30
    record = meta(run, deadline=deadline)
    try:
        gateway, planner, searcher = store["gateway"], store["planner"], store["searcher"]
        await gateway.admit(record, watch_at=deadline)
        assert await planner.create_state(run, record, deadline)
        async with planner.held_state(run, RunMeta) as held:
            assert held.state == record
            held.save(record, RunSnapshot(trace=Trace(), usage=Usage(steps=1)), deadline)
        await planner.add_progress(run, ProgressEvent(event="step", payload={"step": 1}), deadline)
        assert await searcher.add_evidence(run, 1, {"m1": message("m1")}, deadline) == 1
        assert [m.message_id for m in await planner.evidence_list(run)] == ["m1"]
        assert [m.message_id for m in await store["answerer"].evidence_list(run)] == ["m1"]
        assert not await store["answerer"].finished(run)

        verifier = store["verifier"]
        assert await verifier.meta(run) == record
        assert (await verifier.snapshot(run)).usage.steps == 1
        assert set(await verifier.evidence(run)) == {"m1"}
        assert await verifier.claim_owner(run, "1-0", 10_000)
        assert await verifier.store_result(result(run))
        await verifier.announce(result(run), deadline, "1-0")

        assert (await gateway.result(run)).outcome == "answered"
        assert [e.event for _, e in await gateway.read_progress(run, "0-0", block_ms=None)] == [
            "step", "evidence", "done",
        ]
        assert run in await gateway.overdue(deadline + 1, 1000)
        assert await gateway.claim_overdue(run, "replica", 1000)
        await gateway.unwatch(run)
        await gateway.mark_cancelled(record, time.time())
        assert [r for r, _ in await gateway.index_page("acme", newest=time.time(), oldest=0, start=0, count=500)]
        assert [m.run_id for m in await gateway.metas([run]) if m] == [run]
        assert [r.run_id for r in await gateway.results([run]) if r] == [run]
    finally:
        for c in clients.values():
            await c.aclose()


async def test_a_stage_cannot_write_what_its_user_may_not(stage_settings) -> None:
    answerer = connect(stage_settings["answerer"])
    run = run_id()
    try:
        with pytest.raises(blocking_redis.exceptions.NoPermissionError):
            await RunStore(answerer).add_progress(run, ProgressEvent(event="step", payload={}), None)
        with pytest.raises(blocking_redis.exceptions.NoPermissionError):
            await RunStore(answerer).store_result(result(run))
    finally:
        await answerer.aclose()
