"""Memory bounded by age (issue 9, item 9): the worker runtime trims what its groups
consumed (``XTRIM MINID``) and never an entry still unread or pending; a ``forget``
subscription (raw mail) deletes each entry once handled. Real redis-server; each test
reads its own stream, as in ``tests/shared/test_worker.py``."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from dataclasses import replace

import pytest

from pmsearch.shared.bus import encode, publish, publish_in
from pmsearch.shared.consumer_group import ConsumerGroup
from pmsearch.shared.streams import dead_letter, logical
from pmsearch.shared.worker import Delivery
from tests.shared.test_worker import FAST, GROUP, Job, client, home, running, wait_for  # noqa: F401 - fixtures

TRIM = replace(FAST, trim_ms=50, keep_consumed_ms=0)


@pytest.fixture
def stream() -> str:
    """One key: these tests are about trimming a key (with ``--stream-partitions``, the
    first partition of a stream, read as such)."""
    return home(f"pm:test:{uuid.uuid4().hex[:10]}")


class Mail(Job):
    body: str = ""


@pytest.fixture
def trim_rounds(monkeypatch) -> Counter[str]:
    """Trim rounds finished, by stream: what "nothing more goes" waits on, so that it
    has been tried several times however slowly the rounds come."""
    rounds: Counter[str] = Counter()
    real = ConsumerGroup.trim_consumed

    async def counted(self: ConsumerGroup, *args, **kwargs):
        try:
            return await real(self, *args, **kwargs)
        finally:
            rounds[self.stream] += 1

    monkeypatch.setattr(ConsumerGroup, "trim_consumed", counted)
    return rounds


async def more_rounds(rounds: Counter[str], stream: str, more: int = 3) -> None:
    at_least = rounds[stream] + more
    await wait_for(lambda: rounds[stream] >= at_least, f"{more} more trim rounds of {stream}")


async def ids(client, stream: str) -> list[str]:
    return [i.decode() for i, _ in await client.xrange(stream)]


async def test_consumed_entries_are_trimmed_while_a_pending_one_and_those_after_it_stay(
    redis_url, client, stream, trim_rounds
):
    release = asyncio.Event()

    async def handle(job: Job, delivery: Delivery) -> None:
        if job.n == 1:
            await release.wait()  # in flight: pending in the group until it returns

    entries = [await publish(client, stream, Job(n=n)) for n in range(3)]
    first, held, after = (e.decode() for e in entries)
    async with running(redis_url, stream, handle, policy=TRIM, concurrency=3):
        # The first is consumed and dropped; the pending one and the one after it stay.
        await wait_for(lambda: _equals(ids(client, stream), [held, after]))
        await more_rounds(trim_rounds, stream)
        assert await ids(client, stream) == [held, after]
        assert (await client.xpending(stream, GROUP))["pending"] == 1
        release.set()
        await wait_for(lambda: _equals(ids(client, stream), []))
    assert first not in await ids(client, stream)


async def test_entries_another_group_has_not_read_are_kept(redis_url, client, stream, trim_rounds):
    async def handle(job: Job, delivery: Delivery) -> None:
        return None

    await client.xgroup_create(stream, "slow", id="0", mkstream=True)
    for n in range(3):
        await publish(client, stream, Job(n=n))
    async with running(redis_url, stream, handle, policy=TRIM):
        await wait_for(lambda: _pending_zero_after_reading(client, stream))
        await more_rounds(trim_rounds, stream)
        assert await client.xlen(stream) == 3  # "slow" has read none of them


async def test_consumed_entries_younger_than_the_keep_time_stay(redis_url, client, stream, trim_rounds):
    async def handle(job: Job, delivery: Delivery) -> None:
        return None

    old = await client.xadd(stream, encode(Job(n=0)), id=f"{int(time.time() * 1000) - 60_000}-0")
    young = await publish(client, stream, Job(n=1))
    async with running(redis_url, stream, handle, policy=replace(TRIM, keep_consumed_ms=30_000)):
        await wait_for(lambda: _equals(ids(client, stream), [young.decode()]))
        await more_rounds(trim_rounds, stream)
        assert await ids(client, stream) == [young.decode()]
    assert old.decode() not in await ids(client, stream)


async def test_a_forgotten_entry_is_gone_once_handled_and_its_dead_letter_keeps_no_payload(
    redis_url, client, stream
):
    secret = "raw mail body"

    async def handle(job: Mail, delivery: Delivery) -> None:
        if job.n == 2:
            raise RuntimeError("a poison import")

    # The trim loop is slow here: the handled entry must go at once, trimmed as handled.
    slow_trim = replace(FAST, trim_ms=60_000, max_deliveries=1)
    async with running(redis_url, stream, handle, policy=slow_trim, forget=True, parse=Mail.model_validate_json):
        handled = await publish(client, stream, Mail(n=1, body=secret))
        await wait_for(lambda: _equals(ids(client, stream), []))
        await publish(client, stream, Mail(n=2, body=secret))
        await wait_for(lambda: client.xlen(dead_letter(logical(stream))))
        await wait_for(lambda: _equals(ids(client, stream), []))
    assert handled.decode() not in await ids(client, stream)
    (_, letter), = await client.xrange(dead_letter(logical(stream)))
    assert secret.encode() not in letter[b"payload"]
    assert (await client.xpending(stream, GROUP))["pending"] == 0


def _past_every_entry() -> int:
    # An entry id is its millisecond: a cut at "now" can fall in the same millisecond
    # as the entries and keep them. A second later is past every one of them.
    return int(time.time() * 1000) + 1000


async def test_trimming_counts_every_group_and_keeps_what_none_has_consumed(client, stream):
    for n in range(4):
        await publish(client, stream, Job(n=n))
    group = ConsumerGroup(client, stream, GROUP, "c1")
    assert await group.trim_consumed(_past_every_entry()) == 0  # no group yet: nothing consumed
    await group.ensure()
    assert await group.trim_consumed(_past_every_entry()) == 0  # nothing read yet
    (a, _), (b, _) = await group.read(2, 10)
    await group.ack(a)
    assert await group.trim_consumed(_past_every_entry()) == 1  # a; b is pending
    await group.ack(b)
    assert await group.trim_consumed(_past_every_entry()) == 1  # b; two are unread
    assert await client.xlen(stream) == 2


async def _equals(value, expected) -> bool:
    return (await value) == expected


async def _pending_zero_after_reading(client, stream: str) -> bool:
    info = {g["name"].decode(): g for g in await client.xinfo_groups(stream)}
    g = info.get(GROUP)
    return bool(g) and g["pending"] == 0 and g.get("lag") == 0


async def test_a_backlog_longer_than_any_length_cap_loses_no_entry(client, stream):
    # Past the 100,000 entries the streams were once capped at: publishing trims
    # nothing, and trimming drops only what the group has consumed.
    backlog = 100_500
    async with client.pipeline(transaction=False) as pipe:
        for n in range(backlog):
            publish_in(pipe, stream, Job(n=n))
        await pipe.execute()
    group = ConsumerGroup(client, stream, GROUP, "c1")
    await group.ensure()
    assert await group.trim_consumed(_past_every_entry()) == 0
    for entry_id, _ in await group.read(500, 10):
        await group.ack(entry_id)
    assert await group.trim_consumed(_past_every_entry()) == 500
    assert await client.xlen(stream) == backlog - 500
