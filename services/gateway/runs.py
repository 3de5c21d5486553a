"""Agentic runs at the gateway: admission (permission, daily cap, budgets, signed
scope), waiting for and streaming a run, and the deadline watchdog.

The gateway reads what only the verifier writes (final results, progress) with plain
``GET`` and ``XREAD``; it never joins a consumer group on those keys.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from typing import Any, AsyncIterator

from services.gateway import metrics
from services.gateway.errors import CapExhausted, Forbidden, NotFound, UpstreamTimeout
from services.gateway.repository import seconds_to_utc_midnight
from services.gateway.schemas import ApiKeyRecord, SearchRequest
from services.gateway.service import GatewayService
from shared import streams
from shared.bus import decode, publish
from shared.messages import ProgressEvent, RunMeta, RunRequested, RunResult, VerificationRequested

log = logging.getLogger("pmsearch.gateway.runs")
SCOPE_SLACK_SECONDS = 30.0  # the token outlives the deadline a little, for the last tool step


class RunService:
    def __init__(self, gateway: GatewayService) -> None:
        self.gw = gateway
        self.redis = gateway.redis
        self.settings = gateway.settings

    async def start(self, record: ApiKeyRecord, req: SearchRequest) -> RunMeta:
        self.gw.require(record, "search:agentic")
        mailboxes = list(record.mailboxes)
        if req.filters.mailboxes:
            outside = sorted(set(req.filters.mailboxes) - set(record.mailboxes))
            if outside:
                raise Forbidden(f"mailbox {', '.join(outside)} is outside this key's scope")
            mailboxes = [m for m in record.mailboxes if m in req.filters.mailboxes]
        budgets = await self.gw.tenant_settings(record.tenant_id)
        used = await self.gw.repo.take_cap(record.tenant_id, budgets.daily_cap)
        if used is None:
            metrics.CAP_REFUSED.inc()
            raise CapExhausted(
                f"tenant {record.tenant_id} has used its {budgets.daily_cap} agentic searches for today",
                retry_after=seconds_to_utc_midnight(),
            )
        metrics.CAP_TAKEN.inc()
        if budgets.daily_cap:
            metrics.CAP_USE_RATIO.set(used / budgets.daily_cap)
        now = time.time()
        run_id = uuid.uuid4().hex
        deadline = now + budgets.max_seconds
        narrowed = record.model_copy(update={"mailboxes": mailboxes})
        token = self.gw.sign(narrowed, run_id=run_id, expires_at=deadline + self.settings.deadline_grace_seconds + SCOPE_SLACK_SECONDS)
        meta = RunMeta(
            run_id=run_id, tenant_id=record.tenant_id, principal=record.principal, question=req.query,
            scope_token=token, created_at=now, deadline=deadline, max_steps=budgets.max_steps,
        )
        await self.redis.set(streams.meta_key(run_id), meta.model_dump_json(), ex=streams.RUN_TTL_SECONDS)
        await self.redis.zadd(streams.WATCHDOG, {run_id: deadline + self.settings.deadline_grace_seconds})
        await publish(
            self.redis,
            streams.RUNS,
            RunRequested(
                run_id=run_id, tenant_id=record.tenant_id, scope_token=token, deadline=deadline, question=req.query,
                max_steps=budgets.max_steps, max_seconds=budgets.max_seconds, started_at=now,
                strategy=req.strategy,
            ),
        )
        metrics.RUNS_STARTED.inc()
        return meta

    async def meta(self, record: ApiKeyRecord, run_id: str) -> RunMeta:
        raw = await self.redis.get(streams.meta_key(run_id))
        meta = RunMeta.model_validate_json(raw) if raw else None
        if meta is None or meta.tenant_id != record.tenant_id:
            raise NotFound(f"no run {run_id}")  # another tenant's run does not exist for you
        return meta

    async def result(self, run_id: str) -> RunResult | None:
        raw = await self.redis.get(streams.final_key(run_id))
        return RunResult.model_validate_json(raw) if raw else None

    async def wait(self, meta: RunMeta) -> RunResult:
        """The finished run; the watchdog guarantees one shortly after the deadline."""
        give_up = meta.deadline + self.settings.deadline_grace_seconds + 10
        last = "0-0"
        seen_evidence = False
        while time.time() < give_up:
            result = await self.result(meta.run_id)
            if result is not None:
                metrics.RUN_SECONDS.labels(result.outcome).observe(time.time() - meta.created_at)
                return result
            entries = await self.redis.xread({streams.progress_key(meta.run_id): last}, block=250, count=100)
            for _, items in entries or []:
                last = items[-1][0]
                if not seen_evidence and any(decode(f, ProgressEvent).event == "evidence" for _, f in items):
                    seen_evidence = True
                    metrics.FIRST_EVIDENCE_SECONDS.observe(time.time() - meta.created_at)
        raise UpstreamTimeout(f"run {meta.run_id} did not finish; ask GET /v1/runs/{meta.run_id} later")

    async def events(self, meta: RunMeta, last_event_id: str | None) -> AsyncIterator[dict[str, Any]]:
        """SSE events from the run's progress stream, from after ``last_event_id``."""
        last = last_event_id or "0-0"
        give_up = meta.deadline + self.settings.deadline_grace_seconds + 10
        seen_evidence = last_event_id is not None
        while time.time() < give_up:
            entries = await self.redis.xread({streams.progress_key(meta.run_id): last}, block=500, count=100)
            for _, items in entries or []:
                for entry_id, fields in items:
                    last = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
                    event = decode(fields, ProgressEvent)
                    payload: dict[str, Any] = dict(event.payload)
                    if event.event == "evidence" and not seen_evidence:
                        seen_evidence = True
                        metrics.FIRST_EVIDENCE_SECONDS.observe(time.time() - meta.created_at)
                    if event.event == "done":
                        result = await self.result(meta.run_id)
                        payload = result.model_dump(mode="json") if result else payload
                        if result and last_event_id is None:
                            metrics.RUN_SECONDS.labels(result.outcome).observe(time.time() - meta.created_at)
                    yield {"event": event.event, "id": last, "data": json.dumps(payload, ensure_ascii=False)}
                    if event.event == "done":
                        return
        yield {"event": "error", "data": json.dumps({"detail": "run did not finish in time"})}


async def watchdog(gw: GatewayService, stop: asyncio.Event, interval: float = 0.2) -> None:
    """Ask the verifier to end every run still open at its deadline plus the grace."""
    redis = gw.redis
    while not stop.is_set():
        try:
            due = await redis.zrangebyscore(streams.WATCHDOG, "-inf", time.time(), start=0, num=50)
            for raw_id in due:
                run_id = raw_id.decode() if isinstance(raw_id, bytes) else raw_id
                if not await redis.zrem(streams.WATCHDOG, run_id):
                    continue  # another gateway replica took it
                if await redis.exists(streams.final_key(run_id)):
                    continue
                raw = await redis.get(streams.meta_key(run_id))
                if raw is None:
                    continue
                meta = RunMeta.model_validate_json(raw)
                metrics.WATCHDOG_ENDINGS.inc()
                await publish(
                    redis,
                    streams.DRAFTS,
                    VerificationRequested(
                        run_id=run_id, tenant_id=meta.tenant_id, scope_token=meta.scope_token, deadline=meta.deadline,
                        question=meta.question, ending="budget_exhausted", reason="the time budget ran out",
                    ),
                )
        except Exception:  # the watchdog must outlive a Redis hiccup
            log.exception("watchdog round failed")
        try:
            await asyncio.wait_for(stop.wait(), timeout=interval)
        except asyncio.TimeoutError:
            pass
