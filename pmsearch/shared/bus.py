"""Redis plumbing shared by every stage: connecting as the service's own Redis user, and
the one wire format for stream entries.

Entries use FastStream's JSON envelope (``{"data": ..., "headers": ...}`` in the
``__data__`` field), so FastStream subscribers decode them and plain ``XREAD`` readers
(the gateway, which must not write the verifier's streams) decode them with
:func:`decode`.
"""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any, TypeVar
from urllib.parse import urlparse

import redis
import redis.asyncio as aioredis
from pydantic import BaseModel
from redis.asyncio.client import Pipeline
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.asyncio.sentinel import SentinelConnectionPool
from redis.cluster import RedisCluster as SyncCluster
from redis.sentinel import Sentinel

from pmsearch.shared import streams
from pmsearch.shared.redis_cluster import WaitingCluster
from pmsearch.shared.settings import ServiceSettings
from pmsearch.shared.streams import dead_letter

DATA_FIELD = "__data__"
M = TypeVar("M", bound=BaseModel)


# The longest blocking read a worker's client sends: FastStream's XREADGROUP BLOCK polls
# (100 ms for new entries, 2 s for reclaiming). A client that blocks longer says so.
WORKER_BLOCK_SECONDS = 10.0
# A reply may take this long beyond the end of a blocking read before the socket is
# given up: a slow Redis (an fsync stall) is not a dead one.
SOCKET_MARGIN_SECONDS = 10.0
CONNECT_TIMEOUT_SECONDS = 5.0
# TCP keepalive: a peer that vanished without a FIN or RST (a dropped NAT entry, a
# killed VM) is noticed after about IDLE + INTERVAL * COUNT seconds, also in the middle
# of a long BLPOP, instead of after the kernel's retransmission timeout (~15 min).
KEEPALIVE_IDLE_SECONDS = 15
KEEPALIVE_INTERVAL_SECONDS = 5
KEEPALIVE_COUNT = 3
POOL_TIMEOUT_SECONDS = 5.0
HEALTH_CHECK_SECONDS = 30


def _keepalive_options() -> dict[int, int]:
    # Linux names; other platforms lack some of them and keep their defaults there.
    wanted = {
        "TCP_KEEPIDLE": KEEPALIVE_IDLE_SECONDS,
        "TCP_KEEPINTVL": KEEPALIVE_INTERVAL_SECONDS,
        "TCP_KEEPCNT": KEEPALIVE_COUNT,
    }
    return {getattr(socket, name): value for name, value in wanted.items() if hasattr(socket, name)}


def redis_kwargs(settings: ServiceSettings, *, longest_block_seconds: float = WORKER_BLOCK_SECONDS) -> dict[str, Any]:
    """Connection arguments for this service's own Redis user: its credentials, TCP
    keepalive, and a socket timeout above ``longest_block_seconds``, the longest
    blocking read (``BLPOP``, ``XREAD BLOCK``) the client sends, which must not be cut
    short. The one place every Redis client of pmsearch gets these from."""
    kwargs: dict[str, Any] = {
        "socket_keepalive": True,
        "socket_keepalive_options": _keepalive_options(),
        "socket_connect_timeout": CONNECT_TIMEOUT_SECONDS,
        "socket_timeout": longest_block_seconds + SOCKET_MARGIN_SECONDS,
        "health_check_interval": HEALTH_CHECK_SECONDS,
    }
    if settings.redis_username:
        kwargs["username"] = settings.redis_username
    if settings.redis_password:
        kwargs["password"] = settings.redis_password.get_secret_value()
    return kwargs


class _BlockingSentinelPool(SentinelConnectionPool, aioredis.BlockingConnectionPool):
    """The primary the sentinels name, in a pool that waits for a free connection as
    :func:`connect`'s does (redis-py's sentinel pool fails at once when all are busy)."""


def _database(settings: ServiceSettings) -> int:
    path = urlparse(settings.redis_url).path.strip("/")
    return int(path) if path.isdigit() else 0


def _sentinel_login(settings: ServiceSettings) -> dict[str, Any]:
    login: dict[str, Any] = {
        "socket_connect_timeout": CONNECT_TIMEOUT_SECONDS, "socket_timeout": CONNECT_TIMEOUT_SECONDS,
    }
    if settings.redis_sentinel_username:
        login["username"] = settings.redis_sentinel_username
    if settings.redis_sentinel_password:
        login["password"] = settings.redis_sentinel_password.get_secret_value()
    return login


def connect(
    settings: ServiceSettings,
    *,
    max_connections: int | None = None,
    pool_timeout: float = POOL_TIMEOUT_SECONDS,
    longest_block_seconds: float = WORKER_BLOCK_SECONDS,
) -> aioredis.Redis:
    """A client whose pool holds at most ``max_connections`` (default
    ``PM_REDIS_MAX_CONNECTIONS``); when all are busy a command waits up to
    ``pool_timeout`` for one, then raises ``redis.exceptions.ConnectionError``, rather
    than failing at once with ``MaxConnectionsError``. With ``PM_REDIS_SENTINELS`` each
    new connection goes to the primary the sentinels name at that moment; while they
    name none (a failover under way) it fails with ``ConnectionError`` like a Redis
    that is down, which every caller already waits out. With ``PM_REDIS_CLUSTER`` it is
    a cluster client that waits the same way
    (:class:`pmsearch.shared.redis_cluster.WaitingCluster`)."""
    streams.set_partitions(settings.stream_partitions)
    kwargs = redis_kwargs(settings, longest_block_seconds=longest_block_seconds)
    size = max_connections or settings.redis_max_connections
    if settings.redis_sentinels:
        sentinel = AsyncSentinel(settings.sentinel_addresses(), sentinel_kwargs=_sentinel_login(settings))
        return sentinel.master_for(
            settings.redis_sentinel_master, connection_pool_class=_BlockingSentinelPool,
            max_connections=size, timeout=pool_timeout, decode_responses=False, db=_database(settings), **kwargs,
        )
    if settings.redis_cluster:
        url = urlparse(settings.redis_url)
        return WaitingCluster(  # type: ignore[return-value] - the same commands, routed by slot
            host=url.hostname or "127.0.0.1", port=url.port or 6379, max_connections=size,
            pool_timeout=pool_timeout, decode_responses=False, **kwargs,
        )
    pool = aioredis.BlockingConnectionPool.from_url(
        settings.redis_url, max_connections=size, timeout=pool_timeout, decode_responses=False, **kwargs
    )
    return aioredis.Redis.from_pool(pool)


def connect_sync(settings: ServiceSettings) -> redis.Redis:
    """A blocking client for a command-line tool (the verifier's audit), to the same
    Redis as :func:`connect`: through the sentinels when they are set."""
    streams.set_partitions(settings.stream_partitions)
    kwargs = redis_kwargs(settings)
    if settings.redis_cluster:
        url = urlparse(settings.redis_url)
        return SyncCluster(  # type: ignore[return-value] - the same commands, routed by slot
            host=url.hostname or "127.0.0.1", port=url.port or 6379, decode_responses=False, **kwargs
        )
    if settings.redis_sentinels:
        sentinel = Sentinel(settings.sentinel_addresses(), sentinel_kwargs=_sentinel_login(settings))
        return sentinel.master_for(
            settings.redis_sentinel_master, decode_responses=False, db=_database(settings), **kwargs
        )
    return redis.Redis.from_url(settings.redis_url, decode_responses=False, **kwargs)


def raise_if_cancelled() -> None:
    """Raise ``CancelledError`` when the current task is being cancelled.

    A cancellation that lands while redis-py waits on a read can come out as a Redis
    ``TimeoutError`` or ``ConnectionError``. A loop that retries those must call this
    first, or a cancelled wait carries on until its own deadline."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


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


def routing_key(message: BaseModel) -> str:
    """What chooses a message's partition (:func:`pmsearch.shared.streams.partition`): its
    run, so a run's messages stay in one key and in order; else its mail folder, so one
    folder's imports and withdrawals stay in order; else its request."""
    run_id = getattr(message, "run_id", None)
    if run_id:
        return str(run_id)
    mailbox = getattr(message, "mailbox", None)
    if mailbox is not None:
        return f"{getattr(message, 'tenant_id', '')}/{mailbox}/{getattr(message, 'folder', '')}"
    return str(getattr(message, "request_id", ""))


async def publish(redis: aioredis.Redis, stream: str, message: BaseModel) -> bytes:
    """Append ``message`` to ``stream`` (to its partition, when it has several). The
    stream is trimmed by its consumers, of what every group has consumed
    (:meth:`pmsearch.shared.consumer_group.ConsumerGroup.trim_consumed`), never of
    entries nobody has read: a long backlog waits, bounded by Redis's memory (a full
    Redis refuses writes, answered 503 ``store_full``), and a consumer group's lag (what
    an autoscaler reads, ``XINFO GROUPS``) stays exact."""
    return await redis.xadd(streams.partition(stream, routing_key(message)), encode(message))


def publish_in(pipe: Pipeline, stream: str, message: BaseModel) -> None:
    """Queue ``message`` on ``pipe``, as :func:`publish` appends it."""
    pipe.xadd(streams.partition(stream, routing_key(message)), encode(message))


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
