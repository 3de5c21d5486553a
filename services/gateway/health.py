"""The gateway's readiness, ``GET /readyz`` (``/healthz`` is liveness, in app.py): its
store answers, and the deadline watchdog runs and finished a round recently. Without
the watchdog no run past its deadline would ever get a result, so a replica whose
watchdog stopped is not ready even while it serves requests."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

# A round runs every 0.2 s; this long without a finished one means it is stuck or failing.
WATCHDOG_STALE_SECONDS = 10.0
PROBE_SECONDS = 2.0

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


@router.get("/readyz")
async def readyz(request: Request) -> JSONResponse:
    checks: dict[str, str] = {}
    try:
        # The probes' own connection, not the client pool nor the watchdog's: their load
        # must not fail the probe.
        await asyncio.wait_for(request.app.state.probes.ping(), PROBE_SECONDS)
        checks["redis"] = "ok"
    except Exception as exc:  # noqa: BLE001 - reported, not raised: that is the probe's job
        checks["redis"] = f"{type(exc).__name__}: {exc}"[:200]
    checks["watchdog"] = request.app.state.watchdog_health.problem() or "ok"
    ok = all(v == "ok" for v in checks.values())
    return JSONResponse({"status": "ok" if ok else "fail", "checks": checks}, status_code=200 if ok else 503)
