"""HTTP routes of run administration: list, view and cancel any run (admin token), cancel
a run (its owner's API key), a tenant's cap use (admin token). The logic is
:mod:`services.gateway.run_admin`."""

# No ``from __future__ import annotations``: the routes' dependencies are local to
# :func:`router`, and FastAPI resolves string annotations in the module's globals.

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from services.gateway.errors import NotFound
from services.gateway.openapi import problems
from services.gateway.run_admin import CancelAccepted, RunAdmin, RunPage, RunQuery, RunView, TenantUsage
from services.gateway.schemas import ApiKeyRecord
from shared.messages import Outcome, RunResult


async def _admin_api(request: Request) -> RunAdmin:
    return RunAdmin(request.app.state.runs)


AdminApi = Annotated[RunAdmin, Depends(_admin_api)]


def router(caller: Callable[..., Awaitable[ApiKeyRecord]], admin: Callable[..., Awaitable[None]]) -> APIRouter:
    """The routes, authenticated by the gateway's own dependencies (``caller`` for an
    API key, ``admin`` for the admin token), so its API document marks them as such."""
    routes = APIRouter()
    Admin = Depends(admin)
    Caller = Annotated[ApiKeyRecord, Depends(caller)]

    @routes.get(
        "/v1/admin/runs", response_model=RunPage, tags=["admin"], dependencies=[Admin], responses=problems(422, 503)
    )
    async def list_runs(
        api: AdminApi,
        tenant_id: str | None = None,
        principal: str | None = None,
        outcome: Outcome | Literal["running"] | None = None,
        since: Annotated[datetime | None, Query(description="Started at or after (RFC 3339, or Unix seconds)")] = None,
        until: Annotated[datetime | None, Query(description="Started at or before (RFC 3339, or Unix seconds)")] = None,
        limit: Annotated[int, Query(ge=1, le=200)] = 50,
        cursor: str | None = None,
    ) -> RunPage:
        """Runs kept for inspection (``PM_RUN_RETENTION_DAYS``), newest first by start time,
        filtered by tenant, principal, outcome (``running`` for unfinished runs) and start
        time. Page with ``cursor`` = the previous page's ``next_cursor``."""
        query = RunQuery(
            tenant_id=tenant_id, principal=principal, outcome=outcome, since=since, until=until, limit=limit,
            cursor=cursor,
        )
        return await api.list_runs(query)

    @routes.get(
        "/v1/admin/runs/{run_id}", response_model=RunView, tags=["admin"], dependencies=[Admin],
        responses=problems(404, 503),
    )
    async def view_run(run_id: str, api: AdminApi) -> RunView:
        """Any run kept for inspection: its summary and, once finished, its result."""
        view = await api.view(run_id)
        if view is None:
            raise NotFound(f"no run {run_id}")
        return view

    @routes.delete(
        "/v1/runs/{run_id}",
        tags=["search"],
        response_model=RunResult,
        responses={
            202: {"model": CancelAccepted, "description": "Cancelling; the result follows shortly"},
            **problems(404, 409, 429, 503),
        },
    )
    async def cancel_run(run_id: str, api: AdminApi, record: Caller, request: Request):
        """Cancel a running run: it ends once, through the verifier, with outcome and reason
        ``cancelled`` (200 with the result; 202 if it is not stored within seconds). Only
        the run's owner may cancel it (else 404, as for reading it); a finished run is 409.
        A cancellation counts against the key's search rate (429) and waits in one of the
        replica's waiting slots (503 when none is free)."""
        # It writes, publishes and waits for the verifier: as costly as a search.
        await request.app.state.limits.take_search(record.key_id)
        ticket = request.app.state.admission.waiting_runs.take(record.tenant_id)
        try:
            return _cancelled(run_id, await api.cancel(record, run_id))
        finally:
            ticket.release()

    @routes.delete(
        "/v1/admin/runs/{run_id}",
        tags=["admin"],
        response_model=RunResult,
        dependencies=[Admin],
        responses={
            202: {"model": CancelAccepted, "description": "Cancelling; the result follows shortly"},
            **problems(404, 409, 503),
        },
    )
    async def cancel_any_run(run_id: str, api: AdminApi):
        """Cancel any tenant's running run, as an administrator; as ``DELETE /v1/runs/{id}``
        otherwise (200 with the result, 202 while it is being stored, 409 if finished)."""
        return _cancelled(run_id, await api.cancel_any(run_id))

    @routes.get(
        "/v1/admin/tenants/{tenant_id}/usage", response_model=TenantUsage, tags=["admin"], dependencies=[Admin],
        responses=problems(503),
    )
    async def tenant_usage(tenant_id: str, api: AdminApi) -> TenantUsage:
        """Today's use of the tenant's daily cap (UTC day) and its budgets."""
        return await api.usage(tenant_id)

    return routes


def _cancelled(run_id: str, result: RunResult | None) -> JSONResponse:
    if result is None:
        return JSONResponse(CancelAccepted(run_id=run_id).model_dump(), status_code=202)
    return JSONResponse(result.model_dump(mode="json"))
