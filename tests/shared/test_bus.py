"""Publishing to a stream: nothing trimmed at XADD, so a consumer group's lag stays
exact; a cancelled retry loop ends even when redis-py reported the cancel as a timeout."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from redis.exceptions import TimeoutError as RedisTimeout

from pmsearch.shared.bus import connect, publish, raise_if_cancelled
from pmsearch.shared.consumer_group import ConsumerGroup
from pmsearch.shared.messages import Contract
from pmsearch.shared.redis_cluster import WaitingCluster
from pmsearch.shared.settings import ServiceSettings
from tests.shared.test_worker import home


class Ping(Contract):
    n: int


async def test_publishing_trims_nothing_so_old_entries_stay(redis):
    stream = home(f"test:bus:{uuid.uuid4().hex}")
    await redis.xadd(stream, {"data": "old"}, id="1-0")
    await publish(redis, stream, Ping(n=1))
    assert len(await redis.xrange(stream)) == 2


async def lag(redis, stream: str) -> int | None:
    return (await redis.xinfo_groups(stream))[0]["lag"]


async def test_a_groups_lag_counts_exactly_the_unread_entries_after_every_trim_pmsearch_does(redis):
    """What an autoscaler reads (XINFO GROUPS lag) after the consumers' own trims: the
    consumed entries trimmed (XTRIM MINID) and a handled raw-mail entry deleted (XDEL)."""
    stream = home(f"test:bus:{uuid.uuid4().hex}")
    group = ConsumerGroup(redis, stream, "g", "c1")
    await group.ensure()
    for n in range(6):
        await publish(redis, stream, Ping(n=n))
    assert await lag(redis, stream) == 6
    read = await group.read(3, 0)
    for entry_id, _ in read[:2]:
        await group.ack(entry_id)
    await group.ack(read[2][0])
    await group.forget(read[2][0])  # handled raw mail: trimmed with what was consumed before it
    assert await lag(redis, stream) == 3
    await group.trim_consumed(older_than_ms=0)
    assert await lag(redis, stream) == 3
    await publish(redis, stream, Ping(n=6))
    assert await lag(redis, stream) == 4
    for entry_id, _ in await group.read(10, 0):
        await group.ack(entry_id)
    assert await lag(redis, stream) == 0


async def test_trimming_an_unread_entry_by_age_would_overstate_the_lag_for_good(redis):
    """Why nothing is trimmed at XADD (the searcher drops an expired request instead):
    Redis counts a trimmed unread entry as still to read."""
    stream = home(f"test:bus:{uuid.uuid4().hex}")
    group = ConsumerGroup(redis, stream, "g", "c1")
    await group.ensure()
    ids = [await publish(redis, stream, Ping(n=n)) for n in range(4)]
    (read,) = await group.read(1, 0)
    await group.ack(read[0])
    await redis.xadd(stream, {"n": "4"}, minid=ids[3], approximate=False)  # the read one and two unread
    assert await redis.xlen(stream) == 2 and await lag(redis, stream) == 4


async def test_a_retry_loop_ends_when_its_task_is_cancelled_even_if_the_cancel_came_out_as_a_timeout():
    started = asyncio.Event()
    attempts = 0

    async def retrying() -> None:
        nonlocal attempts
        while True:
            attempts += 1
            try:
                started.set()
                try:
                    await asyncio.sleep(10)
                except asyncio.CancelledError:
                    raise RedisTimeout("Timeout reading from socket") from None  # what redis-py can do
            except RedisTimeout:
                raise_if_cancelled()
                continue

    task = asyncio.create_task(retrying())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=5)
    assert attempts == 1


async def test_raise_if_cancelled_does_nothing_in_a_task_nobody_cancelled():
    raise_if_cancelled()


async def test_a_stage_client_parses_replies_with_hiredis(redis_url):
    # Without hiredis redis-py silently falls back to its pure-Python parser, which cost
    # a loaded stack a tenth of its CPU.
    client = connect(ServiceSettings(redis_url=redis_url))
    try:
        if isinstance(client, WaitingCluster):  # with --redis-cluster: a node's connection
            await client.initialize()
            node = client.get_default_node()
            conn = node.acquire_connection()
            assert type(conn._parser).__name__ == "_AsyncHiredisParser"
            node.release(conn)
            return
        conn = await client.connection_pool.get_connection()
        try:
            assert type(conn._parser).__name__ == "_AsyncHiredisParser"
        finally:
            await client.connection_pool.release(conn)
    finally:
        await client.aclose()
