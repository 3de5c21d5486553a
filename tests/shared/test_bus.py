"""Publishing to a stream: bounded by count, or by age for request/reply streams."""

from __future__ import annotations

import uuid

from shared.bus import publish
from shared.messages import Contract


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
