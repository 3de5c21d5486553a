"""Administration: API keys, tenant settings, imports, and runs across tenants.

Only the deployment's admin token reaches this logic (:mod:`pmsearch.services.gateway.auth`): the
admin API is cross-tenant, so no tenant's key opens it.
"""

from __future__ import annotations

import base64
import math
import secrets
import time
import uuid
from datetime import UTC, datetime

from pmsearch.services.gateway.admin.schemas import (
    IngestBatch,
    IngestResult,
    KeyCreate,
    KeyCreated,
    KeyInfo,
    KeyList,
    RunPage,
    RunQuery,
    RunSummary,
    RunView,
    TenantSettingsPatch,
    TenantUsage,
)
from pmsearch.services.gateway.errors import InvalidRequest, NotFound
from pmsearch.services.gateway.repository import GatewayRepository, seconds_to_utc_midnight
from pmsearch.services.gateway.schemas import ApiKeyRecord, TenantSettings
from pmsearch.services.gateway.searcher import Searcher
from pmsearch.shared import streams
from pmsearch.shared.messages import IngestReplied, IngestRequested, RunMeta, RunResult
from pmsearch.shared.runstore import RunStore

# A list request reads at most this many index entries, so a filter that matches
# little cannot make one request scan a tenant's whole retention; the page then comes
# back short, with a cursor to go on from.
SCAN_BUDGET = 2_000
SCAN_BATCH = 200


class AdminService:
    """Keys, tenant settings and imports."""

    def __init__(self, repo: GatewayRepository, searcher: Searcher) -> None:
        self.repo = repo
        self.searcher = searcher

    async def create_key(self, spec: KeyCreate) -> KeyCreated:
        now = datetime.now(UTC)
        if spec.expires_at is not None and spec.expires_at <= now:
            raise InvalidRequest("expires_at: must be in the future")
        key = "pk_" + secrets.token_urlsafe(32)
        record = ApiKeyRecord(
            key_id=uuid.uuid4().hex[:12],
            tenant_id=spec.tenant_id,
            principal=spec.principal,
            permissions=spec.permissions,
            mailboxes=spec.mailboxes,
            created_at=now,
            expires_at=spec.expires_at,
        )
        await self.repo.save_key(key, record)
        return KeyCreated(key=key, record=record)

    async def list_keys(self, tenant_id: str | None) -> KeyList:
        now = datetime.now(UTC)
        records = [r for r in await self.repo.list_keys() if tenant_id is None or r.tenant_id == tenant_id]
        records.sort(key=lambda r: (r.tenant_id, r.created_at))
        return KeyList(keys=[KeyInfo(**r.model_dump(), status=r.status_at(now)) for r in records])

    async def revoke_key(self, key_id: str) -> KeyInfo:
        """Revoke a key for good; revoking a revoked key changes nothing."""
        found = await self.repo.find_key_by_id(key_id)
        if found is None:
            raise NotFound(f"no API key {key_id}")
        digest, record = found
        now = datetime.now(UTC)
        if record.revoked_at is None:
            record = record.model_copy(update={"revoked_at": now})
            await self.repo.update_key(digest, record)
        return KeyInfo(**record.model_dump(), status=record.status_at(now))

    async def tenant_settings(self, tenant_id: str) -> TenantSettings:
        return await self.repo.tenant_settings(tenant_id)

    async def patch_tenant_settings(self, tenant_id: str, patch: TenantSettingsPatch) -> TenantSettings:
        overrides = await self.repo.tenant_overrides(tenant_id) | patch.model_dump(exclude_none=True)
        return await self.repo.save_tenant_overrides(tenant_id, overrides)

    async def ingest(self, batch: IngestBatch) -> IngestResult:
        for i, raw in enumerate(batch.raw):
            try:
                base64.b64decode(raw, validate=True)
            except ValueError:
                raise InvalidRequest(f"raw[{i}] is not valid base64") from None
        request_id = uuid.uuid4().hex
        message = IngestRequested(
            request_id=request_id,
            tenant_id=batch.tenant_id,
            mailbox=batch.mailbox,
            folder=batch.folder,
            raw=batch.raw,
        )
        timeout = self.searcher.settings.ingest_timeout_seconds
        reply = IngestReplied.model_validate_json(await self.searcher.call(streams.INGEST, request_id, message, timeout))
        return IngestResult(
            indexed=sum(i.status == "indexed" for i in reply.items),
            duplicate=sum(i.status == "duplicate" for i in reply.items),
            errors=[f"message {i.index}: {i.error}" for i in reply.items if i.status == "error"],
            collisions=sum(i.collision for i in reply.items),
            notes=[f"message {i.index}: {note}" for i in reply.items for note in i.notes],
            index_id=reply.index_id,
        )


def summary(meta: RunMeta, result: RunResult | None) -> RunSummary:
    return RunSummary(
        run_id=meta.run_id, tenant_id=meta.tenant_id, principal=meta.principal, key_id=meta.key_id,
        question=meta.question, status="running" if result is None else "finished",
        outcome=None if result is None else result.outcome, reason=None if result is None else result.reason,
        created_at=meta.created_at, deadline=meta.deadline,
        finished_at=None if result is None else result.finished_at, cancelled_at=meta.cancelled_at,
        steps=None if result is None else result.usage.steps,
        model_calls=None if result is None else result.usage.model_calls,
    )


def encode_cursor(created_at: float, run_id: str) -> str:
    return base64.urlsafe_b64encode(f"{created_at!r}|{run_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        score, run_id = raw.split("|", 1)
        value = float(score)
        if not run_id or not math.isfinite(value):
            raise ValueError(cursor)
        return value, run_id
    except (ValueError, UnicodeDecodeError):
        raise InvalidRequest("cursor: not a cursor this API returned") from None


def _stamp(value: datetime | None, default: float) -> float:
    if value is None:
        return default
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


class RunAdmin:
    """Runs across tenants, for an administrator: the run store's index, each tenant's cap use."""

    def __init__(self, store: RunStore, repo: GatewayRepository) -> None:
        self.store = store
        self.repo = repo

    async def list_runs(self, q: RunQuery) -> RunPage:
        """Runs newest first (by start time), filtered; see :class:`RunPage`."""
        # Fixed at the request's start, so runs admitted meanwhile do not shift the pages.
        newest, oldest = _stamp(q.until, time.time()), _stamp(q.since, -math.inf)
        after: tuple[float, str] | None = None
        if q.cursor:
            after = decode_cursor(q.cursor)
            newest = min(newest, after[0])
        page: list[RunSummary] = []
        start = scanned = 0
        # Unfiltered, one page's worth is all a request reads; a filter reads more per round.
        batch = SCAN_BATCH if q.principal or q.outcome else q.limit
        last: tuple[float, str] | None = None
        while scanned < SCAN_BUDGET:
            rows = await self.store.index_page(q.tenant_id, newest=newest, oldest=oldest, start=start, count=batch)
            if not rows:
                return RunPage(runs=page, next_cursor=None)
            start += len(rows)
            scanned += len(rows)
            last = (rows[-1][1], rows[-1][0])
            if after is not None:  # same start time as the cursor: only those after it
                rows = [(r, s) for r, s in rows if s < after[0] or r < after[1]]
            metas = await self.store.metas([r for r, _ in rows])
            kept = [(m, s) for m, s in zip(metas, (s for _, s in rows)) if m is not None and self._matches(q, m)]
            results = await self.store.results([m.run_id for m, _ in kept])
            for (meta, score), result in zip(kept, results):
                if q.outcome is not None and q.outcome != (result.outcome if result else "running"):
                    continue
                page.append(summary(meta, result))
                if len(page) == q.limit:
                    return RunPage(runs=page, next_cursor=encode_cursor(score, meta.run_id))
        return RunPage(runs=page, next_cursor=encode_cursor(*last) if last else None)

    @staticmethod
    def _matches(q: RunQuery, meta: RunMeta) -> bool:
        return (q.tenant_id is None or meta.tenant_id == q.tenant_id) and (
            q.principal is None or meta.principal == q.principal
        )

    async def view(self, run_id: str) -> RunView | None:
        meta = await self.store.meta(run_id)
        if meta is None:
            return None
        result = await self.store.result(run_id)
        return RunView(run=summary(meta, result), result=result)

    async def usage(self, tenant_id: str) -> TenantUsage:
        budgets = await self.repo.tenant_settings(tenant_id)
        used = await self.repo.cap_used(tenant_id)
        return TenantUsage(
            tenant_id=tenant_id,
            day=datetime.now(UTC).strftime("%Y-%m-%d"),
            runs_used=used,
            daily_cap=budgets.daily_cap,
            remaining=max(0, budgets.daily_cap - used),
            resets_in_seconds=seconds_to_utc_midnight(),
            budgets=budgets.model_dump(by_alias=True),
        )
