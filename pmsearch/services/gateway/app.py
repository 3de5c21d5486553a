"""The gateway's assembly: its connections and working objects, the error handlers
(every error is ``application/problem+json``), the middleware and each area's routes
(``search/``, ``runs/``, ``admin/``, ``inspector/``, ``mcp/``; each with ``endpoints.py``
for HTTP, ``service.py`` for logic, ``schemas.py`` for bodies).

Run with ``python -m pmsearch.services.gateway.app``.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from typing import AsyncIterator

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError
from redis.exceptions import TimeoutError as RedisTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from pmsearch.services.gateway import api_docs, health, metrics
from pmsearch.services.gateway.admin.endpoints import router as admin_router
from pmsearch.services.gateway.admission import ClientGone
from pmsearch.services.gateway.auth import admin_token, api_key
from pmsearch.services.gateway.errors import InvalidRequest, Overloaded, StoreFull
from pmsearch.services.gateway.health import GatewayProbes, WatchdogHealth
from pmsearch.services.gateway.inspector.endpoints import router as inspector_router
from pmsearch.services.gateway.limits import BodyLimit, BodyTooLargeSignal, problem_response
from pmsearch.services.gateway.mcp import mount as mount_mcp
from pmsearch.services.gateway.openapi import install as install_openapi
from pmsearch.services.gateway.request_log import RequestLog
from pmsearch.services.gateway.runs.endpoints import router as runs_router
from pmsearch.services.gateway.search.endpoints import router as search_router
from pmsearch.services.gateway.state import Gateway
from pmsearch.services.gateway.watchdog import watchdog
from pmsearch.shared.bus import connect
from pmsearch.shared.collector import settle_after_startup
from pmsearch.shared.errors import PmError
from pmsearch.shared.health import start_server
from pmsearch.shared.settings import GatewaySettings, gateway_settings
from pmsearch.shared.telemetry import setup_logging

log = logging.getLogger("pmsearch.gateway")
PROBLEM = "application/problem+json"
# Memory frees as runs expire or an operator acts: minutes, not the second of a busy pool.
STORE_FULL_RETRY_SECONDS = 30
# The watchdog and /healthz: a few connections of their own, never starved by clients.
CONTROL_CONNECTIONS = 4
PROBE_CONNECTIONS = 1


def _problem(status: int, body: dict, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def create_app(settings: GatewaySettings | None = None) -> FastAPI:
    settings = settings or gateway_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Client traffic: a blocking pool sized by the settings, whose sockets outlive
        # the longest BLPOP (a direct call's timeout).
        redis = connect(
            settings,
            max_connections=settings.redis_max_connections,
            pool_timeout=settings.redis_pool_timeout_seconds,
            longest_block_seconds=max(settings.search_timeout_seconds, settings.ingest_timeout_seconds),
        )
        control = connect(settings, max_connections=CONTROL_CONNECTIONS, pool_timeout=settings.redis_pool_timeout_seconds)
        # The health probes' own connection: neither client load nor a slow watchdog
        # round may fail them.
        probes = connect(settings, max_connections=PROBE_CONNECTIONS, pool_timeout=settings.redis_pool_timeout_seconds)
        app.state.gateway = Gateway.build(redis, settings)
        stop = asyncio.Event()
        app.state.watchdog_health = dog_health = WatchdogHealth()
        app.state.probe_checks = checks = GatewayProbes(asyncio.get_running_loop(), probes, dog_health)
        dog = asyncio.create_task(watchdog(control, stop, on_round=dog_health.round_done))
        dog_health.task = dog
        # The operator port (PM_METRICS_HOST:PM_METRICS_PORT): metrics, probes and the
        # AsyncAPI document; the public port then serves none of those to anyone
        # (pmsearch/services/gateway/operators.py) but its two probes' status.
        operator = (
            start_server(settings.metrics_host, settings.metrics_port, checks, api_docs.OPERATOR_DOCUMENTS)
            if settings.metrics_port else None
        )
        yield
        if operator is not None:
            operator.shutdown()
            operator.server_close()
        stop.set()
        await dog
        await redis.aclose()
        await control.aclose()
        await probes.aclose()

    app = FastAPI(
        title="pmsearch",
        version="0.1.0",
        summary="Search your mail; agentic answers carry citations that code has verified.",
        lifespan=lifespan,
    )

    @app.exception_handler(PmError)
    async def _pm_error(request: Request, exc: PmError) -> JSONResponse:
        headers = {"Retry-After": str(exc.extra["retry_after"])} if "retry_after" in exc.extra else None
        if exc.status == 401:
            headers = {**(headers or {}), "WWW-Authenticate": "Bearer"}
        return _problem(exc.status, exc.problem(str(request.url.path)), headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"field": ".".join(str(p) for p in e["loc"] if p != "body"), "message": e["msg"]}
            for e in exc.errors()
        ]
        first = errors[0] if errors else {"field": "body", "message": "invalid"}
        err = InvalidRequest(f"{first['field'] or 'body'}: {first['message']}", errors=errors)
        return _problem(422, err.problem(str(request.url.path)))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        body = {"type": "about:blank", "title": str(exc.detail), "status": exc.status_code, "detail": str(exc.detail)}
        return _problem(exc.status_code, body)

    @app.exception_handler(RedisConnectionError)
    @app.exception_handler(RedisTimeout)
    async def _redis_unavailable(request: Request, exc: Exception) -> JSONResponse:
        # Redis restarting, or every pooled connection busy past the pool timeout: the
        # request may be retried, so say when rather than 500.
        log.warning("Redis unavailable on %s: %s", request.url.path, exc)
        err = Overloaded("the gateway cannot reach its store right now; retry shortly", retry_after=1)
        return _problem(err.status, err.problem(str(request.url.path)), {"Retry-After": "1"})

    @app.exception_handler(OutOfMemoryError)
    async def _store_full(request: Request, exc: OutOfMemoryError) -> JSONResponse:
        # Redis at maxmemory with noeviction refuses every write: say so, and when to try
        # again, instead of a 500; what belongs together was one MULTI, so nothing is half
        # written (docs/design.md, "When Redis is full").
        log.error("Redis is full (maxmemory) on %s: %s", request.url.path, exc)
        metrics.STORE_FULL.inc()
        err = StoreFull("the gateway's store is full; retry once runs expire or memory is freed",
                        retry_after=STORE_FULL_RETRY_SECONDS)
        return _problem(err.status, err.problem(str(request.url.path)), {"Retry-After": str(STORE_FULL_RETRY_SECONDS)})

    @app.exception_handler(ClientGone)
    async def _client_gone(request: Request, exc: ClientGone) -> Response:
        return Response(status_code=499)  # nginx's "client closed request": nobody reads it

    @app.exception_handler(BodyTooLargeSignal)
    async def _too_large(request: Request, exc: BodyTooLargeSignal) -> JSONResponse:
        return problem_response(exc.error, str(request.url.path))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s", request.url.path)
        return _problem(500, PmError("unexpected error; it has been logged").problem(str(request.url.path)))

    app.add_middleware(
        BodyLimit,
        max_body_bytes=settings.max_body_bytes,
        max_ingest_body_bytes=settings.max_ingest_body_bytes,
        admin_token=settings.admin_token,
    )

    app.add_middleware(RequestLog)  # outside the body limit: refused bodies are counted too

    for router in (health.router, search_router, runs_router, admin_router, inspector_router, api_docs.router):
        app.include_router(router)
    install_openapi(app, api_key, admin_token)  # built on first use: routers added later are in it too
    mount_mcp(app)  # MCP over streamable HTTP at /mcp
    return app


def main() -> None:
    settings = gateway_settings()
    setup_logging(settings, "gateway")
    app = create_app(settings)
    settle_after_startup()
    # log_config=None: uvicorn's records go through our handler; requests are logged by _observe.
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning",
                log_config=None, access_log=False)


if __name__ == "__main__":
    main()
