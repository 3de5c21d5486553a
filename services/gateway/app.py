"""The gateway's HTTP wiring. Handlers parse, authenticate, delegate and answer; errors
become ``application/problem+json``.

Run with ``python -m services.gateway.app``.
"""

from __future__ import annotations

import logging
import time
from contextlib import asynccontextmanager
from typing import Annotated, AsyncIterator

import uvicorn
from fastapi import Depends, FastAPI, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException

from services.gateway import metrics
from services.gateway.errors import InvalidRequest, NotAvailable
from services.gateway.schemas import (
    ApiKeyRecord,
    IngestBatch,
    IngestResult,
    KeyCreate,
    KeyCreated,
    SearchRequest,
    SearchResponse,
    TenantSettings,
    TenantSettingsPatch,
)
from services.gateway.service import GatewayService
from shared.bus import connect
from shared.errors import PmError
from shared.settings import GatewaySettings, gateway_settings
from shared.telemetry import setup_logging

log = logging.getLogger("pmsearch.gateway")
PROBLEM = "application/problem+json"


def _problem(status: int, body: dict, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def create_app(settings: GatewaySettings | None = None) -> FastAPI:
    settings = settings or gateway_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        redis = connect(settings)
        app.state.service = GatewayService(redis, settings)
        yield
        await redis.aclose()

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

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s", request.url.path)
        return _problem(500, PmError("unexpected error; it has been logged").problem(str(request.url.path)))

    @app.middleware("http")
    async def _observe(request: Request, call_next):
        started = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        name = getattr(route, "path", "unmatched")
        metrics.REQUESTS.labels(name, str(response.status_code)).inc()
        metrics.REQUEST_SECONDS.labels(name).observe(time.perf_counter() - started)
        return response

    _routes(app)
    return app


def service(request: Request) -> GatewayService:
    return request.app.state.service


Service = Annotated[GatewayService, Depends(service)]


def _bearer(authorization: str | None, x_api_key: str | None) -> str | None:
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return x_api_key


async def caller(
    svc: Service,
    authorization: Annotated[str | None, Header()] = None,
    x_api_key: Annotated[str | None, Header()] = None,
) -> ApiKeyRecord:
    return await svc.authenticate(_bearer(authorization, x_api_key))


async def admin(
    svc: Service,
    authorization: Annotated[str | None, Header()] = None,
) -> None:
    svc.require_admin(_bearer(authorization, None))


Caller = Annotated[ApiKeyRecord, Depends(caller)]
Admin = Depends(admin)


def _routes(app: FastAPI) -> None:
    @app.get("/healthz", include_in_schema=False)
    async def healthz(svc: Service) -> dict:
        await svc.redis.ping()
        return {"status": "ok"}

    @app.get("/metrics", include_in_schema=False)
    async def prometheus() -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    @app.post("/v1/search", response_model=SearchResponse, tags=["search"])
    async def search(body: SearchRequest, record: Caller, svc: Service) -> SearchResponse:
        """Keyword, semantic or hybrid search inside the caller's scope."""
        svc.require(record, "search")
        if body.mode == "agentic":
            raise NotAvailable("mode 'agentic' is not available yet")
        try:
            result = await svc.search(record, body)
        except PmError as exc:
            metrics.SEARCHES.labels(body.mode, exc.code).inc()
            raise
        metrics.SEARCHES.labels(body.mode, "ok").inc()
        return result

    @app.post("/v1/admin/keys", response_model=KeyCreated, status_code=201, tags=["admin"], dependencies=[Admin])
    async def create_key(body: KeyCreate, svc: Service) -> KeyCreated:
        """Create an API key. The key is shown once; only its hash is stored."""
        return await svc.create_key(body)

    @app.get("/v1/admin/tenants/{tenant_id}/settings", tags=["admin"], dependencies=[Admin])
    async def get_tenant_settings(tenant_id: str, svc: Service) -> dict:
        return (await svc.tenant_settings(tenant_id)).model_dump(by_alias=True)

    @app.patch("/v1/admin/tenants/{tenant_id}/settings", tags=["admin"], dependencies=[Admin])
    async def patch_tenant_settings(tenant_id: str, body: TenantSettingsPatch, svc: Service) -> dict:
        current = await svc.tenant_settings(tenant_id)
        updated = TenantSettings.model_validate(current.model_dump() | body.model_dump(exclude_none=True))
        await svc.repo.save_tenant_settings(tenant_id, updated)
        return updated.model_dump(by_alias=True)

    @app.post("/v1/admin/ingest", response_model=IngestResult, tags=["admin"], dependencies=[Admin])
    async def ingest(body: IngestBatch, svc: Service) -> IngestResult:
        """Import RFC 822 messages (base64) into a tenant's mailbox. Idempotent by Message-ID."""
        return await svc.ingest(body)


app = create_app


def main() -> None:
    settings = gateway_settings()
    setup_logging(settings.log_level)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="warning")


if __name__ == "__main__":
    main()
