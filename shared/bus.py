"""Redis plumbing shared by every stage: connecting as the service's own Redis user, and
the one wire format for stream entries.

Entries use FastStream's JSON envelope (``{"data": ..., "headers": ...}`` in the
``__data__`` field), so FastStream subscribers decode them and plain ``XREAD`` readers
(the gateway, which must not write the verifier's streams) decode them with
:func:`decode`.
"""

from __future__ import annotations

import json
import time
from typing import Any, TypeVar

import redis.asyncio as aioredis
from pydantic import BaseModel

from shared.settings import ServiceSettings
from shared.streams import STREAM_MAXLEN, dead_letter

DATA_FIELD = "__data__"
M = TypeVar("M", bound=BaseModel)


def redis_kwargs(settings: ServiceSettings) -> dict[str, Any]:
    """Connection arguments for this service's own Redis user."""
    kwargs: dict[str, Any] = {}
    if settings.redis_username:
        kwargs["username"] = settings.redis_username
    if settings.redis_password:
        kwargs["password"] = settings.redis_password.get_secret_value()
    return kwargs


def connect(settings: ServiceSettings) -> aioredis.Redis:
    # No socket read timeout: blocking reads (BLPOP, XREAD BLOCK) carry their own, and
    # redis-py's default of 5 s would cut a long ingest reply short.
    return aioredis.from_url(
        settings.redis_url, decode_responses=False, socket_timeout=None, health_check_interval=30, **redis_kwargs(settings)
    )


def encode(message: BaseModel) -> dict[str, bytes]:
    envelope = {
        "data": message.model_dump_json(),
        "headers": {"content-type": "application/json", "message_type": type(message).__name__},
    }
    return {DATA_FIELD: json.dumps(envelope).encode()}


def decode(fields: dict[bytes | str, bytes | str], model: type[M]) -> M:
    raw = fields.get(DATA_FIELD.encode(), fields.get(DATA_FIELD))
    if raw is None:
        raise ValueError("stream entry has no data field")
    envelope = json.loads(raw)
    return model.model_validate_json(envelope["data"])


async def publish(
    redis: aioredis.Redis, stream: str, message: BaseModel, *, max_age_seconds: float | None = None
) -> bytes:
    """Append ``message``; the stream keeps its newest STREAM_MAXLEN entries, or with
    ``max_age_seconds`` only entries that young (a request nobody waits for any more is
    worth nothing, and 100k raw mail batches would fill Redis, which refuses writes when
    full rather than drop queued work)."""
    if max_age_seconds is not None:
        oldest_ms = int((time.time() - max_age_seconds) * 1000)
        return await redis.xadd(stream, encode(message), minid=f"{max(oldest_ms, 0)}-0", approximate=False)
    return await redis.xadd(stream, encode(message), maxlen=STREAM_MAXLEN, approximate=True)


async def dead_letter_entry(
    redis: aioredis.Redis, stream: str, raw: Any, error: str, deliveries: int
) -> None:
    """Park a message that cannot be handled, with why and how often it was tried."""
    payload = raw if isinstance(raw, (str, bytes)) else json.dumps(raw, default=str)
    await redis.xadd(
        dead_letter(stream),
        {"payload": payload, "error": error[:2000], "deliveries": str(deliveries)},
        maxlen=10_000,
        approximate=True,
    )
