"""Publishing to a stream: bounded by count, or by age for request/reply streams; a
cancelled retry loop ends even when redis-py reported the cancel as a timeout."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from redis.exceptions import TimeoutError as RedisTimeout

from pmsearch.shared.bus import connect, publish, raise_if_cancelled
from pmsearch.shared.messages import Contract
from pmsearch.shared.settings import ServiceSettings


class Ping(Contract):
    n: int


async def test_a_request_stream_keeps_only_entries_younger_than_its_max_age(redis):
    stream = f"test:bus:{uuid.uuid4().hex}"
    # An entry from an hour ago, as a stuck consumer would leave it.
    await redis.xadd(stream, {"data": "old"}, id="1-0")
    await publish(redis, stream, Ping(n=1), max_age_seconds=60)
    entries = await redis.xrange(stream)
    assert len(entries) == 1 and entries[0][1].get(b"data") != b"old"


async def test_without_a_max_age_old_entries_stay(redis):
    stream = f"test:bus:{uuid.uuid4().hex}"
    await redis.xadd(stream, {"data": "old"}, id="1-0")
    await publish(redis, stream, Ping(n=1))
    assert len(await redis.xrange(stream)) == 2


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
        conn = await client.connection_pool.get_connection()
        try:
            assert type(conn._parser).__name__ == "_AsyncHiredisParser"
        finally:
            await client.connection_pool.release(conn)
    finally:
        await client.aclose()
