"""The gateway's HTTP wiring. Handlers parse, authenticate, delegate and answer; errors
become ``application/problem+json``.

Run with ``python -m services.gateway.app``.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from typing import Annotated, AsyncIterator

import uvicorn
from fastapi import Depends, FastAPI, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError
from redis.exceptions import TimeoutError as RedisTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from services.gateway import admin_runs, api_docs, health, metrics
from services.gateway.admission import Admission, ClientGone, HeldEventSource, Ticket, unless_client_leaves
from services.gateway.errors import InvalidRequest, NotFound, Overloaded, StoreFull
from services.gateway.health import GatewayProbes, WatchdogHealth
from services.gateway.idempotency import parse_idempotency_key
from services.gateway.inspector import install as install_inspector
from services.gateway.limits import BodyLimit, BodyTooLargeSignal, KeyLimits, problem_response
from services.gateway.mcp import mount as mount_mcp
from services.gateway.openapi import EventStream, RunEvent, RunStatus, problems, streams_events
from services.gateway.openapi import install as install_openapi
from services.gateway.operators import bearer, client_address, operator_request
from services.gateway.request_log import RequestLog
from services.gateway.runs import RunService, parse_last_event_id
from services.gateway.schemas import (
    ApiKeyRecord,
    IngestBatch,
    IngestResult,
    KeyCreate,
    KeyCreated,
    KeyInfo,
    KeyList,
    SearchRequest,
    SearchResponse,
    TenantSettings,
    TenantSettingsPatch,
)
from services.gateway.service import GatewayService
from services.gateway.watchdog import watchdog
from shared.bus import connect
from shared.collector import settle_after_startup
from shared.errors import PmError
from shared.health import start_server
from shared.logging_setup import bind
from shared.messages import RunResult
from shared.settings import GatewaySettings, gateway_settings
from shared.telemetry import setup_logging

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
        gw = GatewayService(redis, settings)
        app.state.service = gw
        app.state.control = control
        app.state.probes = probes
        app.state.runs = RunService(gw)
        app.state.admission = Admission(settings)
        app.state.limits = KeyLimits(
            redis, search_rate_per_minute=settings.search_rate_per_minute,
            max_streams=settings.max_streams_per_key, lease_seconds=settings.stream_lease_seconds,
        )
        stop = asyncio.Event()
        app.state.watchdog_health = dog_health = WatchdogHealth()
        app.state.probe_checks = checks = GatewayProbes(asyncio.get_running_loop(), probes, dog_health)
        dog = asyncio.create_task(watchdog(control, stop, on_round=dog_health.round_done))
        dog_health.task = dog
        # The operator port (PM_METRICS_HOST:PM_METRICS_PORT): metrics, probes and the
        # AsyncAPI document; the public port then serves none of those to anyone
        # (services/gateway/operators.py) but its two probes' status.
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
        admin_token=settings.admin_token.get_secret_value() if settings.admin_token else None,
    )

    app.add_middleware(RequestLog)  # outside the body limit: refused bodies are counted too

    _routes(app)
    install_inspector(app)  # the run inspector page, /runs/{id}
    app.include_router(admin_runs.router(caller, admin))  # run administration
    app.include_router(api_docs.router)
    app.include_router(health.router)
    install_openapi(app, caller, admin)  # built on first use: routers added later are in it too
    mount_mcp(app)  # MCP over streamable HTTP at /mcp
    return app


# Dependencies are coroutines: FastAPI runs a plain function in a worker thread, a
# thread hand-off per dependency per request (measured: a tenth of the gateway's CPU).
async def service(request: Request) -> GatewayService:
    return request.app.state.service


Service = Annotated[GatewayService, Depends(service)]


async def runs(request: Request) -> RunService:
    return request.app.state.runs


Runs = Annotated[RunService, Depends(runs)]


async def limits(request: Request) -> KeyLimits:
    return request.app.state.limits


Limits = Annotated[KeyLimits, Depends(limits)]


async def admission(request: Request) -> Admission:
    return request.app.state.admission


Capacities = Annotated[Admission, Depends(admission)]


async def caller(
    request: Request,
    svc: Service,
    authorization: Annotated[str | None, Header()] = None,
    x_api_key: Annotated[str | None, Header()] = None,
) -> ApiKeyRecord:
    record = await svc.authenticate(bearer(authorization, x_api_key), client_address(request))
    bind(tenant=record.tenant_id)
    return record


async def admin(
    request: Request,
    svc: Service,
    authorization: Annotated[str | None, Header()] = None,
) -> None:
    svc.require_admin(bearer(authorization), client_address(request))


Caller = Annotated[ApiKeyRecord, Depends(caller)]
Admin = Depends(admin)


def _routes(app: FastAPI) -> None:
    @app.get("/healthz", include_in_schema=False)
    async def healthz(request: Request) -> JSONResponse:
        checks = await request.app.state.probe_checks.live()
        ok = all(v == "ok" for v in checks.values())
        return JSONResponse({"status": "ok" if ok else "fail"}, status_code=200 if ok else 503)

    @app.get("/metrics", include_in_schema=False)
    async def prometheus(request: Request) -> Response:
        if not operator_request(request, request.app.state.service):
            raise NotFound("no such resource")  # not advertised to the public
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    @app.post(
        "/v1/search",
        tags=["search"],
        response_model=SearchResponse | RunResult,
        responses={
            **streams_events("Hits (keyword, semantic, hybrid), a finished run (agentic), or an SSE stream."),
            **problems(400, 403, 409, 429, 503, 504),
        },
    )
    async def search(
        request: Request,
        body: SearchRequest,
        record: Caller,
        svc: Service,
        run_svc: Runs,
        key_limits: Limits,
        capacity: Capacities,
        accept: Annotated[str | None, Header()] = None,
        idempotency_key: Annotated[
            str | None,
            Header(description="Agentic only: a request sent again with the same key and body gets the run "
                               "the first one started (its stream or its result, `Idempotent-Replayed: true`) "
                               "instead of a new run, for a day. 1-255 printable ASCII characters. The same key "
                               "with another body is 422 `idempotency_key_reused`; while the first request is "
                               "still starting its run, 409 `idempotency_key_in_use` with `Retry-After`."),
        ] = None,
    ):
        """Keyword, semantic or hybrid search inside the caller's scope; or an agentic
        run that answers with verified citations. For ``agentic``, send
        ``Accept: text/event-stream`` to stream ``step``, ``evidence``, ``answer`` and
        ``done`` events; otherwise the call waits and returns the finished run.

        Known limit: verification checks that every sentence cites retrieved messages
        and that every quoted phrase occurs in a cited source. A paraphrase without a
        quote can still be wrong while citing a relevant message: read the evidence
        for decisions that matter."""
        if body.mode == "agentic":
            streamed = bool(accept and "text/event-stream" in accept)
            idempotency_key = parse_idempotency_key(idempotency_key)  # refused before any slot is taken
            # This replica's capacity, then the key's slot: a refused request must not
            # start a run or spend the cap.
            ticket = (capacity.event_streams if streamed else capacity.waiting_runs).take(record.tenant_id)
            try:
                return await _agentic(request, body, record, run_svc, key_limits, ticket, streamed, idempotency_key)
            except BaseException:
                ticket.release()
                raise
            finally:
                if not streamed:
                    ticket.release()  # a stream's ticket goes back when the stream ends
        svc.require(record, "search")
        ticket = capacity.direct_searches.take(record.tenant_id)
        try:
            await key_limits.take_search(record.key_id)
            result = await unless_client_leaves(request.receive, svc.search(record, body), "direct_searches")
        except PmError as exc:
            metrics.SEARCHES.labels(body.mode, exc.code).inc()
            raise
        finally:
            ticket.release()
        metrics.SEARCHES.labels(body.mode, "ok").inc()
        return result

    @app.get(
        "/v1/runs/{run_id}", tags=["search"], response_model=RunResult,
        responses={202: {"model": RunStatus, "description": "The run has not finished yet."}, **problems(404, 503)},
    )
    async def get_run(run_id: str, record: Caller, run_svc: Runs):
        """A run's result when finished (200), else its status (202). Only the key's
        principal, with ``search:agentic`` and the run's scope, sees the run (else 404)."""
        meta = await run_svc.meta(record, run_id)
        result = await run_svc.result(run_id)
        if result is None:
            return JSONResponse({"run_id": run_id, "status": "running", "deadline": meta.deadline}, status_code=202)
        return JSONResponse(result.model_dump(mode="json"))

    @app.get(
        "/v1/runs/{run_id}/events", tags=["search"], response_model=RunEvent, response_class=EventStream,
        responses=problems(400, 404, 429, 503),
    )
    async def run_events(
        run_id: str,
        record: Caller,
        run_svc: Runs,
        key_limits: Limits,
        capacity: Capacities,
        last_event_id: Annotated[str | None, Header()] = None,
    ):
        """The run's events as SSE, from the start or after ``Last-Event-ID``; a finished
        run replays from its stored result. Only the key's principal, in the run's scope,
        sees the run (else 404)."""
        after = parse_last_event_id(last_event_id)  # refused before the 200 starts
        meta = await run_svc.meta(record, run_id)
        ticket = capacity.event_streams.take(record.tenant_id)
        try:
            slot = await key_limits.open_stream(record.key_id)
        except BaseException:
            ticket.release()
            raise
        return HeldEventSource(slot.stream(run_svc.events(meta, after)), ping=5, release=ticket.release)

    @app.post(
        "/v1/admin/keys", response_model=KeyCreated, status_code=201, tags=["admin"], dependencies=[Admin],
        responses=problems(503),
    )
    async def create_key(body: KeyCreate, svc: Service) -> KeyCreated:
        """Create an API key. The key is shown once; only its hash is stored. With
        ``expires_at``, the key stops working then (401)."""
        return await svc.create_key(body)

    @app.get("/v1/admin/keys", response_model=KeyList, tags=["admin"], dependencies=[Admin], responses=problems(503))
    async def list_keys(svc: Service, tenant_id: str | None = None) -> KeyList:
        """Every API key (of one tenant with ``tenant_id``): its record and status, never the key."""
        return await svc.list_keys(tenant_id)

    @app.delete(
        "/v1/admin/keys/{key_id}", response_model=KeyInfo, tags=["admin"], dependencies=[Admin],
        responses=problems(404, 503),
    )
    async def revoke_key(key_id: str, svc: Service) -> KeyInfo:
        """Revoke an API key: from now on it gets 401. Revoking twice is harmless."""
        return await svc.revoke_key(key_id)

    @app.get(
        "/v1/admin/tenants/{tenant_id}/settings", response_model=TenantSettings, tags=["admin"],
        dependencies=[Admin], responses=problems(503),
    )
    async def get_tenant_settings(tenant_id: str, svc: Service) -> dict:
        return (await svc.tenant_settings(tenant_id)).model_dump(by_alias=True)

    @app.patch(
        "/v1/admin/tenants/{tenant_id}/settings", response_model=TenantSettings, tags=["admin"],
        dependencies=[Admin], responses=problems(503),
    )
    async def patch_tenant_settings(tenant_id: str, body: TenantSettingsPatch, svc: Service) -> dict:
        current = await svc.tenant_settings(tenant_id)
        updated = TenantSettings.model_validate(current.model_dump() | body.model_dump(exclude_none=True))
        await svc.repo.save_tenant_settings(tenant_id, updated)
        return updated.model_dump(by_alias=True)

    @app.post(
        "/v1/admin/ingest", response_model=IngestResult, tags=["admin"], dependencies=[Admin],
        responses=problems(429, 503, 504),
    )
    async def ingest(request: Request, body: IngestBatch, svc: Service, capacity: Capacities) -> IngestResult:
        """Import RFC 822 messages (base64) into a tenant's mailbox. Idempotent by Message-ID."""
        ticket = capacity.direct_searches.take(body.tenant_id)  # a direct call to the searcher, like a search
        try:
            return await unless_client_leaves(request.receive, svc.ingest(body), "direct_searches")
        finally:
            ticket.release()


async def _agentic(
    request: Request,
    body: SearchRequest,
    record: ApiKeyRecord,
    run_svc: RunService,
    key_limits: KeyLimits,
    ticket: Ticket,
    streamed: bool,
    idempotency_key: str | None,
) -> Response:
    """Start an agentic run holding ``ticket`` and the key's slot (or follow the one
    ``idempotency_key`` started); stream it or wait for it."""
    slot = await key_limits.open_stream(record.key_id)
    try:
        meta, followed = await run_svc.start(record, body, idempotency_key)
        bind(run_id=meta.run_id)
    except BaseException:
        await slot.release()
        raise
    headers = {"X-Run-Id": meta.run_id, "Location": f"/v1/runs/{meta.run_id}"}
    if followed:
        headers["Idempotent-Replayed"] = "true"
    if streamed:
        # A followed run's stream starts from its first event, with nothing observed twice.
        events = run_svc.events(meta, "0-0" if followed else None)
        return HeldEventSource(slot.stream(events), headers=headers, ping=5, release=ticket.release)
    async with slot.held():
        result = await unless_client_leaves(request.receive, run_svc.wait(meta, live=not followed), "waiting_runs")
    return JSONResponse(result.model_dump(mode="json"), headers=headers)



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
