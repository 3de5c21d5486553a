"""Request limits at the gateway: how much a request may send, how often a key may
search, and how many streams a key may hold open.

The body limit is an ASGI middleware, so it acts before FastAPI reads or parses the
body and before authentication costs anything: a declared ``Content-Length`` over the
limit is refused with 413 without reading a byte, and a chunked body is counted as it
arrives. Only a request that carries the admin token may send an ingest-sized body, and
only to the ingest endpoint.

Rate and concurrency counters live in Redis, so every gateway replica sees the same
numbers. They use plain commands in MULTI/EXEC (the gateway's Redis user may not run
scripts): a fixed one-minute window per key for plain searches, and a sorted set of
leases per key for streams, each lease renewed while its stream is open and expiring on
its own if a replica dies holding it.
"""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import anyio
from fastapi.responses import JSONResponse
from pydantic import SecretStr
from redis.asyncio import Redis
from redis.exceptions import RedisError
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pmsearch.services.gateway.auth import bearer, same_secret
from pmsearch.services.gateway.errors import BodyTooLarge, RateLimited, TooManyStreams
from pmsearch.shared.bus import raise_if_cancelled

PROBLEM = "application/problem+json"
INGEST_PATH = "/v1/admin/ingest"
RATE_WINDOW_SECONDS = 60
STREAM_RETRY_AFTER_SECONDS = 1  # a stream ends when its run does: seconds, usually


class BodyTooLargeSignal(HTTPException):
    """Raised from ``receive`` when a streamed body passes the limit. An HTTPException,
    because FastAPI turns any other error while reading the body into a 400."""

    def __init__(self, error: BodyTooLarge) -> None:
        super().__init__(status_code=413, detail=error.detail)
        self.error = error


def problem_response(error: BodyTooLarge, path: str) -> JSONResponse:
    # Connection: close, so the server hangs up instead of draining the rest of the body.
    return JSONResponse(error.problem(path), status_code=error.status, media_type=PROBLEM,
                        headers={"Connection": "close"})


class BodyLimit:
    """ASGI middleware: refuse request bodies over their limit before anyone reads them."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int, max_ingest_body_bytes: int,
                 admin_token: SecretStr | None) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_ingest_body_bytes = max_ingest_body_bytes
        self._admin = admin_token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, setting = self._limit(scope)
        error = BodyTooLarge(f"the request body is over the {limit:,} byte limit ({setting})", limit=limit)
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await problem_response(error, scope["path"])(scope, receive, send)
            return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLargeSignal(error)
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except BodyTooLargeSignal:
            if started:
                raise
            await problem_response(error, scope["path"])(scope, receive, send)

    def _limit(self, scope: Scope) -> tuple[int, str]:
        if scope["path"] == INGEST_PATH and self._is_admin(scope):
            return self.max_ingest_body_bytes, "PM_MAX_INGEST_BODY_BYTES"
        return self.max_body_bytes, "PM_MAX_BODY_BYTES"

    def _is_admin(self, scope: Scope) -> bool:
        return same_secret(bearer(Headers(scope=scope).get("authorization")), self._admin)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the server refuses a malformed length before we see it
    return None


class KeyLimits:
    """Per-API-key rate and stream limits, shared by all replicas through Redis."""

    def __init__(self, redis: Redis, *, search_rate_per_minute: int, max_streams: int,
                 lease_seconds: float) -> None:
        self.redis = redis
        self.search_rate_per_minute = search_rate_per_minute
        self.max_streams = max_streams
        self.lease_seconds = lease_seconds

    async def take_search(self, key_id: str) -> None:
        """Count one plain search; :class:`RateLimited` past the key's rate."""
        if not self.search_rate_per_minute:
            return
        key = f"pm:limit:rate:{key_id}"
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.incrby(key, 1)
            pipe.pexpire(key, RATE_WINDOW_SECONDS * 1000, nx=True)
            pipe.pttl(key)
            used, _, ttl_ms = await pipe.execute()
        if used > self.search_rate_per_minute:
            retry = max(1, math.ceil((ttl_ms if ttl_ms > 0 else RATE_WINDOW_SECONDS * 1000) / 1000))
            raise RateLimited(
                f"this API key has made its {self.search_rate_per_minute} searches for this minute "
                "(PM_SEARCH_RATE_PER_MINUTE)",
                retry_after=retry,
            )

    async def open_stream(self, key_id: str) -> StreamSlot:
        """A slot for one stream or agentic run; :class:`TooManyStreams` when the key
        holds all of its slots."""
        key = f"pm:limit:streams:{key_id}"
        lease = uuid.uuid4().hex
        now = time.time()
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.zremrangebyscore(key, "-inf", now)  # leases whose holder died
            pipe.zadd(key, {lease: now + self.lease_seconds})
            pipe.zcard(key)
            pipe.pexpire(key, int(self.lease_seconds * 1000))
            _, _, held, _ = await pipe.execute()
        if held > self.max_streams:
            # Add-then-count in one transaction never admits one too many; the loser
            # takes its lease back.
            await self.redis.zrem(key, lease)
            raise TooManyStreams(
                f"this API key already has {self.max_streams} open streams or agentic runs "
                "(PM_MAX_STREAMS_PER_KEY); retry when one ends",
                retry_after=STREAM_RETRY_AFTER_SECONDS,
            )
        return StreamSlot(self, key, lease)


class StreamSlot:
    """One held lease: renewed while held, given back when the stream ends."""

    def __init__(self, limits: KeyLimits, key: str, lease: str) -> None:
        self._limits = limits
        self._key = key
        self._lease = lease

    async def release(self) -> None:
        # Shielded: when the client has gone away this runs inside a cancelled scope,
        # where an unshielded await would be cancelled before the slot is given back.
        with anyio.CancelScope(shield=True):
            await self._limits.redis.zrem(self._key, self._lease)

    async def _renew(self) -> None:
        lease_seconds = self._limits.lease_seconds
        while True:
            await asyncio.sleep(lease_seconds / 3)
            try:
                async with self._limits.redis.pipeline(transaction=True) as pipe:
                    pipe.zadd(self._key, {self._lease: time.time() + lease_seconds})
                    pipe.pexpire(self._key, int(lease_seconds * 1000))
                    await pipe.execute()
            except RedisError:
                raise_if_cancelled()
                continue  # a Redis restart: keep renewing, the stream itself carries on

    @asynccontextmanager
    async def renewed(self) -> AsyncIterator[None]:
        """The lease kept alive while the block runs (given back by :meth:`release`)."""
        renewer = asyncio.create_task(self._renew())
        try:
            yield
        finally:
            renewer.cancel()
            with anyio.CancelScope(shield=True):
                await asyncio.gather(renewer, return_exceptions=True)

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        try:
            async with self.renewed():
                yield
        finally:
            await self.release()

    async def stream(self, events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        """``events``, holding the slot until they end or the client goes away. A stream
        that never starts frees its slot when the lease runs out."""
        async with self.held():
            async for event in events:
                yield event
