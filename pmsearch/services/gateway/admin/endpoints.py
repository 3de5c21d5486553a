"""The admin API (the deployment's admin token only): API keys, tenant settings, imports,
and runs across tenants."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request

from pmsearch.services.gateway.admin.schemas import (
    IngestBatch,
    IngestResult,
    KeyCreate,
    KeyCreated,
    KeyInfo,
    KeyList,
    RunPage,
    RunQuery,
    RunView,
    TenantSettingsPatch,
    TenantUsage,
)
from pmsearch.services.gateway.admission import unless_client_leaves
from pmsearch.services.gateway.auth import Admin, admin_token
from pmsearch.services.gateway.errors import NotFound
from pmsearch.services.gateway.openapi import problems
from pmsearch.services.gateway.runs.endpoints import cancelled
from pmsearch.services.gateway.runs.schemas import CancelAccepted
from pmsearch.services.gateway.schemas import TenantSettings
from pmsearch.services.gateway.state import Objects
from pmsearch.shared.messages import Outcome, RunResult

router = APIRouter(tags=["admin"], dependencies=[Depends(admin_token)])


@router.post("/v1/admin/keys", response_model=KeyCreated, status_code=201, responses=problems(503))
async def create_key(body: KeyCreate, gw: Objects) -> KeyCreated:
    """Create an API key. The key is shown once; only its hash is stored. With
    ``expires_at``, the key stops working then (401)."""
    return await gw.admin.create_key(body)


@router.get("/v1/admin/keys", response_model=KeyList, responses=problems(503))
async def list_keys(gw: Objects, tenant_id: str | None = None) -> KeyList:
    """Every API key (of one tenant with ``tenant_id``): its record and status, never the key."""
    return await gw.admin.list_keys(tenant_id)


@router.delete("/v1/admin/keys/{key_id}", response_model=KeyInfo, responses=problems(404, 503))
async def revoke_key(key_id: str, gw: Objects) -> KeyInfo:
    """Revoke an API key: from now on it gets 401. Revoking twice is harmless."""
    return await gw.admin.revoke_key(key_id)


@router.get("/v1/admin/tenants/{tenant_id}/settings", response_model=TenantSettings, responses=problems(503))
async def get_tenant_settings(tenant_id: str, gw: Objects) -> dict:
    return (await gw.admin.tenant_settings(tenant_id)).model_dump(by_alias=True)


@router.patch("/v1/admin/tenants/{tenant_id}/settings", response_model=TenantSettings, responses=problems(503))
async def patch_tenant_settings(tenant_id: str, body: TenantSettingsPatch, gw: Objects) -> dict:
    return (await gw.admin.patch_tenant_settings(tenant_id, body)).model_dump(by_alias=True)


@router.post("/v1/admin/ingest", response_model=IngestResult, responses=problems(429, 503, 504))
async def ingest(request: Request, body: IngestBatch, principal: Admin, gw: Objects) -> IngestResult:
    """Import RFC 822 messages (base64) into a tenant's mailbox. Idempotent by Message-ID."""
    # A direct call to the searcher, like a search, counted against the tenant it fills.
    async with gw.admission.hold("direct_searches", principal, tenant=body.tenant_id):
        return await unless_client_leaves(request.receive, gw.admin.ingest(body), "direct_searches")


@router.get("/v1/admin/runs", response_model=RunPage, responses=problems(422, 503))
async def list_runs(
    gw: Objects,
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
    return await gw.run_admin.list_runs(query)


@router.get("/v1/admin/runs/{run_id}", response_model=RunView, responses=problems(404, 503))
async def view_run(run_id: str, gw: Objects) -> RunView:
    """Any run kept for inspection: its summary and, once finished, its result."""
    view = await gw.run_admin.view(run_id)
    if view is None:
        raise NotFound(f"no run {run_id}")
    return view


@router.delete(
    "/v1/admin/runs/{run_id}",
    response_model=RunResult,
    responses={
        202: {"model": CancelAccepted, "description": "Cancelling; the result follows shortly"},
        **problems(404, 409, 503),
    },
)
async def cancel_any_run(run_id: str, gw: Objects):
    """Cancel any tenant's running run, as an administrator; as ``DELETE /v1/runs/{id}``
    otherwise (200 with the result, 202 while it is being stored, 409 if finished)."""
    return cancelled(run_id, await gw.runs.cancel_any(run_id))


@router.get("/v1/admin/tenants/{tenant_id}/usage", response_model=TenantUsage, responses=problems(503))
async def tenant_usage(tenant_id: str, gw: Objects) -> TenantUsage:
    """Today's use of the tenant's daily cap (UTC day) and its budgets."""
    return await gw.run_admin.usage(tenant_id)
