"""FastStream wiring shared by the stream workers.

Each stage's replicas form one consumer group per input stream. Two subscribers read a
stream: one takes new entries (``XREADGROUP``), the other reclaims entries whose consumer
died (``XAUTOCLAIM`` after :data:`RECLAIM_IDLE_MS`). Handlers acknowledge only after
their effects are written. A message that does not match its contract is dead-lettered
at once; one whose handler keeps failing is dead-lettered after
:data:`MAX_DELIVERIES` attempts, with the count.
"""

from __future__ import annotations

import logging
import os
import socket
from typing import Any, Awaitable, Callable, TypeVar

from faststream import AckPolicy
from faststream.redis import RedisBroker, StreamSub
from faststream.redis.annotations import RedisStreamMessage
from pydantic import BaseModel, ValidationError
from redis.asyncio import Redis

from shared.bus import dead_letter_entry, redis_kwargs
from shared.settings import ServiceSettings
from shared.streams import GROUP

log = logging.getLogger("pmsearch.worker")

M = TypeVar("M", bound=BaseModel)
RECLAIM_IDLE_MS = 60_000
RECLAIM_POLL_MS = 2_000
MAX_DELIVERIES = 5
DELIVERY_TTL_SECONDS = 3600


def consumer_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def make_broker(settings: ServiceSettings) -> RedisBroker:
    return RedisBroker(settings.redis_url, **redis_kwargs(settings), logger=log)


def subscribe(
    broker: RedisBroker,
    redis: Redis,
    stream: str,
    model: type[M],
    handle: Callable[[M], Awaitable[None]],
    *,
    reclaim_idle_ms: int = RECLAIM_IDLE_MS,
    concurrency: int = 1,
) -> None:
    """Register ``handle`` for ``stream`` (new and reclaimed entries) in the stage's group."""
    group = GROUP[stream]
    me = consumer_name()

    async def on_message(body: Any, message: RedisStreamMessage) -> None:
        await _guarded(redis, stream, model, handle, body, message)

    for consumer, idle in ((me, None), (f"{me}-reclaim", reclaim_idle_ms)):
        # New entries wake a blocked XREADGROUP at once; reclaiming can poll slowly.
        poll = 100 if idle is None else RECLAIM_POLL_MS
        sub = StreamSub(stream, group=group, consumer=consumer, min_idle_time=idle, polling_interval=poll)
        extra = {"max_workers": concurrency} if concurrency > 1 and idle is None else {}
        broker.subscriber(stream=sub, ack_policy=AckPolicy.MANUAL, **extra)(on_message)


async def _guarded(
    redis: Redis,
    stream: str,
    model: type[M],
    handle: Callable[[M], Awaitable[None]],
    body: Any,
    message: RedisStreamMessage,
) -> None:
    entry_id = message.raw_message["message_ids"][0]
    entry_key = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
    try:
        parsed = model.model_validate_json(body) if isinstance(body, (str, bytes)) else model.model_validate(body)
    except ValidationError as exc:
        log.warning("dead-lettering %s %s: %s", stream, entry_key, exc.errors()[:1])
        await dead_letter_entry(redis, stream, body, f"contract: {exc.errors()[:3]}", 1)
        await message.ack()
        return
    try:
        await handle(parsed)
    except Exception as exc:
        counter = f"pm:deliveries:{stream}:{entry_key}"
        deliveries = await redis.incr(counter)
        await redis.expire(counter, DELIVERY_TTL_SECONDS)
        if deliveries >= MAX_DELIVERIES:
            log.exception("dead-lettering %s %s after %d deliveries", stream, entry_key, deliveries)
            await dead_letter_entry(redis, stream, parsed.model_dump(mode="json"), repr(exc), deliveries)
            await message.ack()
            return
        log.exception("handler failed on %s %s (delivery %d); left pending", stream, entry_key, deliveries)
        raise
    await message.ack()


__all__ = ["make_broker", "subscribe", "consumer_name"]
