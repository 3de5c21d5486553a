"""A Redis Cluster client that waits for a free connection, as the single-server and
Sentinel clients of :func:`pmsearch.shared.bus.connect` do.

redis-py's asyncio ``RedisCluster`` opens at most ``max_connections`` to each node and
raises ``MaxConnectionsError`` on the next command when they are all busy: under a burst
that is an error where every other stage setting waits. Here each command, and each
pipeline for its whole life (a ``WATCH``ed transaction holds its connection from the
``WATCH`` to the ``EXEC``), first takes one of ``max_connections`` permits of the client.
A holder uses at most one connection of any node at a time, so no node's pool runs out;
a command that finds no permit within the pool timeout fails with ``ConnectionError``, as
a blocking pool's does, which every caller already waits out."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any

from redis.asyncio.cluster import ClusterPipeline, RedisCluster
from redis.crc import key_slot
from redis.exceptions import ConnectionError as RedisConnectionError

_holding: ContextVar[bool] = ContextVar("pm_cluster_permit", default=False)
STREAM_READS = frozenset({"XREAD", "XREADGROUP"})


def _stream_read_keys(args: tuple[Any, ...]) -> list[Any]:
    """The keys of ``XREAD``/``XREADGROUP``'s arguments: the first half of what follows
    ``STREAMS`` (the rest are their ids); empty when there is no such word."""
    for i, arg in enumerate(args):
        word = arg.decode(errors="replace") if isinstance(arg, bytes) else arg
        if isinstance(word, str) and word.upper() == "STREAMS":
            rest = args[i + 1:]
            return list(rest[: len(rest) // 2])
    return []


class WaitingCluster(RedisCluster):
    def __init__(self, *args: Any, pool_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._permits = asyncio.Semaphore(kwargs.get("max_connections", 100))
        self._pool_timeout = pool_timeout

    @contextlib.asynccontextmanager
    async def permit(self) -> AsyncIterator[None]:
        """One permit for the current task (none more if it holds one: a pipeline's own
        commands run inside its permit)."""
        if _holding.get():
            yield
            return
        try:
            await asyncio.wait_for(self._permits.acquire(), self._pool_timeout)
        except TimeoutError:
            raise RedisConnectionError(f"no free Redis connection within {self._pool_timeout:g} s") from None
        token = _holding.set(True)
        try:
            yield
        finally:
            _holding.reset(token)
            self._permits.release()

    async def _determine_slot(self, command: str, *args: Any) -> int:
        # A stream read names its keys after STREAMS; redis-py cannot place them from
        # the command table and asks the server (COMMAND GETKEYS) every time: a round
        # trip for each of a worker's reads, a quarter of a run's Redis commands.
        if command.upper() in STREAM_READS:
            keys = _stream_read_keys(args)
            if keys:
                slots = {key_slot(self.encoder.encode(k)) for k in keys}
                if len(slots) == 1:
                    return slots.pop()
        return await super()._determine_slot(command, *args)

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        async with self.permit():
            return await super().execute_command(*args, **kwargs)

    def pipeline(self, transaction: Any | None = None, shard_hint: Any | None = None) -> ClusterPipeline:
        if shard_hint:
            return super().pipeline(transaction, shard_hint)  # refused there, with redis-py's words
        return _WaitingPipeline(self, transaction)


class _WaitingPipeline(ClusterPipeline):
    """A pipeline that holds a permit from ``async with`` to its end, or, used without
    one, for each ``execute``."""

    def __init__(self, client: WaitingCluster, transaction: Any | None = None) -> None:
        super().__init__(client, transaction)
        self._waiting_client = client
        self._held: contextlib.AbstractAsyncContextManager[None] | None = None

    async def __aenter__(self) -> _WaitingPipeline:
        held = self._waiting_client.permit()
        await held.__aenter__()
        self._held = held
        return await super().__aenter__()

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await super().__aexit__(*exc)
        finally:
            held, self._held = self._held, None
            if held is not None:
                await held.__aexit__(None, None, None)

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        async with self._waiting_client.permit():
            return await super().execute(*args, **kwargs)
