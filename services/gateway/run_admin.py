"""Run administration: listing runs from the run store's index, cancelling a run for
its owner, a tenant's cap use. The HTTP wiring is :mod:`services.gateway.admin_runs`.

A cancelled run ends like an overdue one: the gateway records the cancellation on the
run's record and asks the verifier, the only writer of results, for a ``cancelled``
ending (:func:`services.gateway.watchdog.request_ending`). The verifier ends every draft
of a cancelled run ``cancelled`` and refuses that ending for any other run, so the run
ends exactly once, with one ``done``, whichever draft gets there first.
"""

from __future__ import annotations

import asyncio
import base64
import math
import time
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from services.gateway.errors import Conflict, InvalidRequest, NotFound
from services.gateway.repository import seconds_to_utc_midnight
from services.gateway.runs import RunService
from services.gateway.schemas import ApiKeyRecord
from services.gateway.watchdog import request_ending
from shared.messages import Outcome, RunMeta, RunResult
from shared.runstore import RunStore

# A list request reads at most this many index entries, so a filter that matches
# little cannot make one request scan a tenant's whole retention; the page then comes
# back short, with a cursor to go on from.
SCAN_BUDGET = 2_000
SCAN_BATCH = 200
# How long a cancel waits for the verifier's result before answering 202.
CANCEL_WAIT_SECONDS = 5.0
_POLL_SECONDS = 0.05

RunStatus = Literal["running", "finished"]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunSummary(_Out):
    """One run as the admin list shows it (times are Unix seconds)."""

    run_id: str
    tenant_id: str
    principal: str
    key_id: str
    question: str
    status: RunStatus
    outcome: Outcome | None = None
    reason: str | None = None
    created_at: float
    deadline: float
    finished_at: float | None = None
    cancelled_at: float | None = None
    steps: int | None = None
    model_calls: int | None = None


class RunPage(_Out):
    runs: list[RunSummary]
    next_cursor: str | None = Field(
        description="Pass as `cursor` for the next page; null once the index is exhausted. A page may hold "
        "fewer than `limit` runs (even none) when a filter matched few of the entries one request reads."
    )


class RunView(_Out):
    """One run for the admin: its summary and, once finished, its stored result."""

    run: RunSummary
    result: RunResult | None = None


class CancelAccepted(_Out):
    run_id: str
    status: Literal["cancelling"] = "cancelling"


class TenantUsage(_Out):
    tenant_id: str
    day: str = Field(description="The UTC day the cap counts (YYYY-MM-DD).")
    runs_used: int
    daily_cap: int
    remaining: int
    resets_in_seconds: int
    budgets: dict[str, float | int] = Field(description="The tenant's settings, by their dotted names.")


class RunQuery(_Out):
    tenant_id: str | None = None
    principal: str | None = None
    outcome: Outcome | Literal["running"] | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = Field(default=50, ge=1, le=200)
    cursor: str | None = None


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
    def __init__(self, runs: RunService) -> None:
        self.runs = runs
        self.store: RunStore = runs.store

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

    async def cancel(self, record: ApiKeyRecord, run_id: str) -> RunResult | None:
        """Cancel the caller's run: its ``cancelled`` result, or None when the verifier
        has not stored it within :data:`CANCEL_WAIT_SECONDS` (it will). 404 for a run the
        caller may not read; 409 when the run ended otherwise first."""
        return await self._cancel(await self.runs.meta(record, run_id), "cancelled by its owner")

    async def cancel_any(self, run_id: str) -> RunResult | None:
        """:meth:`cancel` for an administrator: any tenant's run (404 for an unknown one)."""
        meta = await self.store.meta(run_id)
        if meta is None:
            raise NotFound(f"no run {run_id}")
        return await self._cancel(meta, "cancelled by an administrator")

    async def _cancel(self, meta: RunMeta, note: str) -> RunResult | None:
        run_id = meta.run_id
        if await self.store.finished(run_id):
            raise Conflict(f"run {run_id} has already finished")
        if meta.cancelled_at is None:
            meta = await self.store.mark_cancelled(meta, time.time())
        await request_ending(self.runs.redis, meta, "cancelled", note)
        give_up = time.monotonic() + CANCEL_WAIT_SECONDS
        while time.monotonic() < give_up:
            result = await self.store.result(run_id)
            if result is not None:
                if result.outcome != "cancelled":
                    raise Conflict(f"run {run_id} finished ({result.outcome}) before it could be cancelled")
                return result
            await asyncio.sleep(_POLL_SECONDS)
        return None

    async def usage(self, tenant_id: str) -> TenantUsage:
        budgets = await self.runs.gw.tenant_settings(tenant_id)
        used = await self.runs.gw.repo.cap_used(tenant_id)
        return TenantUsage(
            tenant_id=tenant_id,
            day=datetime.now(UTC).strftime("%Y-%m-%d"),
            runs_used=used,
            daily_cap=budgets.daily_cap,
            remaining=max(0, budgets.daily_cap - used),
            resets_in_seconds=seconds_to_utc_midnight(),
            budgets=budgets.model_dump(by_alias=True),
        )
