"""Each request's metrics and its one log line, as a plain ASGI middleware.

Starlette's ``@app.middleware("http")`` runs the app in a task of its own and passes
every chunk of a streamed response through a memory stream: for an event stream, that
is every event of a run, about a tenth of the gateway's CPU under load. Here the app
runs in the caller's task and ``send`` is only watched for the response's start.
"""

from __future__ import annotations

import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pmsearch.services.gateway import metrics
from pmsearch.shared.logging_setup import bound

log = logging.getLogger("pmsearch.gateway")
# Probes and scrapes come every few seconds: logged below INFO.
QUIET_ROUTES = frozenset({"/healthz", "/readyz", "/metrics"})


class RequestLog:
    """Counts and times every HTTP request by route and status, and logs it once when
    its response starts (an event stream's duration is until its first byte), with the
    fields its handler bound (tenant, run id)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        with bound() as fields:  # handlers bind the tenant and a started run's id into it

            async def watched(message: Message) -> None:
                if message["type"] == "http.response.start":
                    _observe(scope, message["status"], time.perf_counter() - started, fields)
                await send(message)

            await self.app(scope, receive, watched)


def _observe(scope: Scope, status: int, seconds: float, fields: dict) -> None:
    route = getattr(scope.get("route"), "path", "unmatched")
    metrics.REQUESTS.labels(route, str(status)).inc()
    metrics.REQUEST_SECONDS.labels(route).observe(seconds)
    if "run_id" in (scope.get("path_params") or {}):
        fields.setdefault("run_id", scope["path_params"]["run_id"])
    log.log(
        logging.DEBUG if route in QUIET_ROUTES else logging.INFO, "request",
        extra={"method": scope["method"], "route": route, "status": status, "duration_ms": round(seconds * 1000, 1)},
    )
