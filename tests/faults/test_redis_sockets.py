"""Redis connections that go silent are noticed (issue 9, item 11).

Every client pmsearch makes gets TCP keepalive and a socket timeout above the longest
blocking read it sends (``pmsearch.shared.bus.redis_kwargs``). A peer that vanishes without a
FIN (a dropped NAT entry, a killed VM) is then found by keepalive probes, and a
connection that stays open but answers nothing by the socket timeout; before, a
command on it waited for ever (the watchdog's with it).

Against a real redis-server, through a TCP relay in the test that can turn one
connection silent: it keeps the socket open and swallows everything, as a black hole.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time

import pytest
import redis.asyncio as aioredis
from redis.exceptions import TimeoutError as RedisTimeout

from pmsearch.shared.bus import SOCKET_MARGIN_SECONDS, connect
from pmsearch.shared.settings import ServiceSettings
from tests.fixtures.waiting import until


class Relay:
    """A TCP relay to Redis whose open connections can be made silent."""

    def __init__(self, redis_url: str) -> None:
        host_port = redis_url.split("//", 1)[1].split("/", 1)[0]
        self.host, port = host_port.rsplit(":", 1)
        self.port = int(port)
        self.silent = False  # applies to connections open now; new ones relay again
        self._open: list[dict] = []
        self._server: asyncio.AbstractServer | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/0"

    async def __aenter__(self) -> Relay:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc) -> None:
        self._server.close()
        for conn in self._open:
            for task in conn["tasks"]:
                task.cancel()
            conn["writer"].close()

    def silence_open_connections(self) -> None:
        for conn in self._open:
            conn["silent"] = True

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        conn = {"silent": False, "writer": writer, "tasks": []}
        self._open.append(conn)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                while data := await src.read(65536):
                    if not conn["silent"]:
                        dst.write(data)
                        await dst.drain()

        conn["tasks"] = [asyncio.create_task(pipe(reader, up_writer)), asyncio.create_task(pipe(up_reader, writer))]


async def test_a_client_has_keepalive_and_a_socket_timeout_above_its_longest_block(redis_url):
    client = connect(ServiceSettings(redis_url=redis_url), longest_block_seconds=30)
    try:
        await client.ping()
        conn = await client.connection_pool.get_connection()
        try:
            sock = conn._writer.transport.get_extra_info("socket")
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            if hasattr(socket, "TCP_KEEPIDLE"):
                assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) <= 60
            assert conn.socket_timeout == 30 + SOCKET_MARGIN_SECONDS
        finally:
            await client.connection_pool.release(conn)
    finally:
        await client.aclose()


async def test_a_blocking_read_as_long_as_declared_is_not_cut_short(redis_url):
    client = connect(ServiceSettings(redis_url=redis_url), longest_block_seconds=1)
    try:
        started = time.monotonic()
        assert await client.blpop(["test:sockets:nothing"], timeout=1) is None
        assert time.monotonic() - started >= 1
    finally:
        await client.aclose()


async def test_a_command_on_a_silent_connection_fails_in_time_and_the_next_uses_a_new_one(redis_url):
    async with Relay(redis_url) as relay:
        client = connect(ServiceSettings(redis_url=relay.url), longest_block_seconds=0.5)
        try:
            await client.set("test:sockets:key", "value")
            relay.silence_open_connections()
            started = time.monotonic()
            # Before: no socket timeout, so this waited for ever.
            with pytest.raises(RedisTimeout):
                async with asyncio.timeout(40):
                    await client.get("test:sockets:key")
            assert time.monotonic() - started < SOCKET_MARGIN_SECONDS + 5
            # The silent connection was dropped: the caller's next try (the watchdog's
            # next round, a stream's next read) gets a working one.
            assert await client.get("test:sockets:key") == b"value"
        finally:
            await client.aclose()


async def test_a_full_pool_makes_a_command_wait_for_a_connection_not_fail(redis_url):
    client = connect(ServiceSettings(redis_url=redis_url), max_connections=2, pool_timeout=5, longest_block_seconds=2)
    admin = aioredis.from_url(redis_url)
    try:
        already = await blocked_pops(admin)
        blocked = [asyncio.create_task(client.blpop([f"test:sockets:wait{i}"], timeout=2)) for i in range(2)]
        await until(lambda: _at_least(blocked_pops(admin), already + 2), "both connections held by blocking reads")
        assert await client.ping()
        assert any(task.done() for task in blocked)  # it waited for one of them to give its connection back
        await asyncio.gather(*blocked)
    finally:
        await client.aclose()
        await admin.aclose()


async def blocked_pops(admin) -> int:
    return sum(1 for c in await admin.client_list() if c["cmd"] == "blpop" and "b" in c["flags"])


async def _at_least(count, least: int) -> bool:
    return await count >= least
