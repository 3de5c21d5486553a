"""The gateway's probes and metrics on its public port: liveness (``GET /healthz``),
readiness (``GET /readyz``: its store answers, and the deadline watchdog runs and
finished a round recently) and, for operators only, ``GET /metrics``. Without the
watchdog no run past its deadline would ever get a result, so a replica whose watchdog
stopped is not ready even while it serves requests."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from redis.asyncio import Redis

from pmsearch.services.gateway.errors import NotFound
from pmsearch.services.gateway.operators import operator_request
from pmsearch.shared.health import PROBE_SECONDS, LoopProbes

# A round runs every 0.2 s; this long without a finished one means it is stuck or failing.
WATCHDOG_STALE_SECONDS = 10.0

router = APIRouter(include_in_schema=False)


@dataclass
class WatchdogHealth:
    """What the readiness probe knows of the watchdog task."""

    task: asyncio.Task[None] | None = None
    last_round: float = field(default_factory=time.monotonic)  # start counts: rounds begin at once

    def round_done(self) -> None:
        self.last_round = time.monotonic()

    def problem(self) -> str | None:
        if self.task is None or self.task.done():
            return "the watchdog task is not running"
        age = time.monotonic() - self.last_round
        if age > WATCHDOG_STALE_SECONDS:
            return f"no watchdog round finished for {age:.0f} s"
        return None


class GatewayProbes(LoopProbes):
    """The gateway's liveness (its probe connection answers) and readiness (Redis and
    the watchdog), for its public port and its operator port alike."""

    def __init__(self, loop: asyncio.AbstractEventLoop, redis: Redis, watchdog: WatchdogHealth) -> None:
        super().__init__(loop, PROBE_SECONDS)
        # The probes' own connection, not the client pool nor the watchdog's: their load
        # must not fail the probe.
        self.redis = redis
        self.watchdog = watchdog

    async def live(self) -> dict[str, str]:
        return await self.run_checks({"redis": self._ping})

    async def ready(self) -> dict[str, str]:
        return await self.run_checks({"redis": self._ping, "watchdog": self._watchdog})

    async def _ping(self) -> None:
        await self.redis.ping()

    async def _watchdog(self) -> None:
        problem = self.watchdog.problem()
        if problem is not None:
            raise RuntimeError(problem)


@router.get("/healthz")
async def healthz(request: Request) -> JSONResponse:
    checks = await request.app.state.probe_checks.live()
    ok = all(v == "ok" for v in checks.values())
    return JSONResponse({"status": "ok" if ok else "fail"}, status_code=200 if ok else 503)


@router.get("/metrics")
async def prometheus(request: Request) -> Response:
    if not await operator_request(request):
        raise NotFound("no such resource")  # not advertised to the public
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


@router.get("/readyz")
async def readyz(request: Request) -> JSONResponse:
    """Ready or not; what each check found only for an operator (it names hosts and errors)."""
    checks = await request.app.state.probe_checks.ready()
    ok = all(v == "ok" for v in checks.values())
    body: dict = {"status": "ok" if ok else "fail"}
    if await operator_request(request):
        body["checks"] = checks
    return JSONResponse(body, status_code=200 if ok else 503)
