"""Agentic runs at the gateway: admission (permission, daily cap, budgets, signed
scope), waiting for, streaming and cancelling a run. The deadline watchdog is
:mod:`pmsearch.services.gateway.watchdog`.

A run belongs to the principal and scope that started it: only a key of that principal,
with ``search:agentic`` and a scope covering the run's, may read it; to anyone else it
does not exist (404).

What a client is told about a run's outcome (``answer``, ``done``, the JSON result)
comes only from the run's final key, which only the verifier may write. The progress
stream is shared by several stages, so the gateway relays its ``step`` and ``evidence``
entries and treats ``answer``/``done`` entries there as a wake-up, never as content.
The gateway reads with plain ``GET`` and ``XREAD``; it never joins a consumer group.

A cancelled run ends like an overdue one: the gateway records the cancellation on the
run's record and asks the verifier, the only writer of results, for a ``cancelled``
ending (:func:`pmsearch.services.gateway.watchdog.request_ending`). The verifier ends every draft
of a cancelled run ``cancelled`` and refuses that ending for any other run, so the run
ends exactly once, with one ``done``, whichever draft gets there first.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid
from functools import partial
from typing import Any, AsyncIterator, Awaitable, Callable

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeout

from pmsearch.services.gateway import metrics
from pmsearch.services.gateway.auth import Principal
from pmsearch.services.gateway.errors import (
    BadHeader,
    CapExhausted,
    Conflict,
    Forbidden,
    IdempotencyKeyInUse,
    NotFound,
    UpstreamTimeout,
)
from pmsearch.services.gateway.repository import GatewayRepository, seconds_to_utc_midnight
from pmsearch.services.gateway.runs.idempotency import REMEMBER_SECONDS, Claim, IdempotencyKeys, follow, request_digest
from pmsearch.services.gateway.schemas import ApiKeyRecord
from pmsearch.services.gateway.search.schemas import SearchRequest
from pmsearch.services.gateway.searcher import Searcher
from pmsearch.services.gateway.watchdog import request_ending
from pmsearch.shared import streams
from pmsearch.shared.bus import publish, raise_if_cancelled
from pmsearch.shared.messages import AnswerStyle, ProgressEvent, RunMeta, RunRequested, RunResult
from pmsearch.shared.runstore import RunStore

log = logging.getLogger("pmsearch.gateway.runs")
SCOPE_SLACK_SECONDS = 30.0  # the token outlives the deadline a little, for the last tool step
RELAYED = frozenset({"step", "evidence"})  # progress entries passed on as written
_ENTRY_ID = re.compile(r"\d{1,20}-\d{1,20}")
# A wait or a stream outlives a Redis hiccup (a restart, a full pool): it tries again
# after this pause, until the run's own time is up.
REDIS_RETRY_SECONDS = 0.25
_TRANSIENT = (RedisConnectionError, RedisTimeout)
# How long a cancel waits for the verifier's result before answering 202.
CANCEL_WAIT_SECONDS = 5.0
_POLL_SECONDS = 0.05
# A recorded run whose started mark is missing this long after its record was written
# was left by a failed admission (see RunService._resume), not one still under way: an
# admission takes milliseconds, and this is well inside the reservation's time.
RESUME_AFTER_SECONDS = 2.0


def parse_last_event_id(value: str | None) -> str | None:
    """A ``Last-Event-ID`` as sent: a progress entry ID (``<ms>-<seq>``), or None."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    if not _ENTRY_ID.fullmatch(value):
        raise BadHeader("Last-Event-ID must be the id of an event this run's stream sent, like 1718000000000-0")
    return value


def may_read(record: ApiKeyRecord, meta: RunMeta) -> bool:
    """Whether ``record``'s key may read the run: same tenant and principal, the agentic
    permission, and a scope that covers the run's (a run recorded without one: nobody)."""
    return (
        "search:agentic" in record.permissions
        and meta.tenant_id == record.tenant_id
        and meta.principal == record.principal
        and bool(meta.mailboxes)
        and set(meta.mailboxes) <= set(record.mailboxes)
    )


def requested_for(meta: RunMeta, req: SearchRequest, answer_style: AnswerStyle) -> RunRequested:
    """The message that starts the run ``meta`` records for ``req``."""
    return RunRequested(
        run_id=meta.run_id, tenant_id=meta.tenant_id, scope_token=meta.scope_token, deadline=meta.deadline,
        question=meta.question, max_steps=meta.max_steps, max_seconds=meta.deadline - meta.created_at,
        started_at=meta.created_at, strategy=req.strategy, answer_style=answer_style,
    )


class RunService:
    def __init__(self, searcher: Searcher, repo: GatewayRepository) -> None:
        self.searcher = searcher
        self.repo = repo
        self.redis = searcher.redis
        self.settings = searcher.settings
        self.store = RunStore(self.redis, retention_days=self.settings.run_retention_days)
        self.requests = IdempotencyKeys(self.redis, remember_seconds=min(REMEMBER_SECONDS, self.store.retention))

    async def start(
        self, record: ApiKeyRecord, req: SearchRequest, idempotency_key: str | None = None
    ) -> tuple[RunMeta, bool]:
        """Admit and publish a run for ``req`` and return it with False; or, when
        ``idempotency_key`` came before with the same body, the run that request started,
        with True (no second run, no second unit of the cap)."""
        Principal(key=record).require("search:agentic")
        mailboxes = self._mailboxes(record, req)
        run_id = uuid.uuid4().hex
        if idempotency_key is None:
            return await self._admit(record, req, mailboxes, run_id), False
        claim = Claim(run_id=run_id, request=request_digest(req))
        earlier = await self.requests.reserve(record.key_id, idempotency_key, claim)
        if earlier is not None:
            resumed = None
            if not earlier.started and earlier.request == claim.request:
                resumed = await self._resume(record, req, idempotency_key, earlier)
            meta = resumed or await self.meta(record, follow(earlier, claim.request))
            metrics.RUNS_FOLLOWED.inc()
            return meta, True
        try:
            meta = await self._admit(
                record, req, mailboxes, run_id,
                before_publish=partial(self.requests.mark_started, record.key_id, idempotency_key, claim),
            )
        except _TRANSIENT:
            # Whether the run was recorded, marked or published is unknown: the
            # reservation stays, so the request sent again follows or resumes the run
            # (or, when nothing was recorded, starts afresh once the reservation expires).
            raise
        except Exception:
            await self.requests.release(record.key_id, idempotency_key, claim)
            raise
        return meta, False

    async def _resume(
        self, record: ApiKeyRecord, req: SearchRequest, idempotency_key: str, earlier: Claim
    ) -> RunMeta | None:
        """Start the run an earlier request with the same body recorded but never marked started, and return
        it; None when there is no such run to start.

        Admission is one hash slot a step, so a Redis failover (replication is
        asynchronous) can keep the run's record yet lose the later started mark, and the
        gateway that wrote both has already failed the request. Without this, the
        request sent again would wait out the reservation and start a second run while
        the first sat recorded until the watchdog ended it. The record must be older than
        :data:`RESUME_AFTER_SECONDS`, so that an admission still under way is left to
        finish; if one was only slow, both publish, and the planner takes a run's second
        ``RunRequested`` as a redelivery."""
        meta = await self.store.meta(earlier.run_id)
        if meta is None or not may_read(record, meta) or time.time() - meta.created_at < RESUME_AFTER_SECONDS:
            return None
        await self.requests.mark_started(record.key_id, idempotency_key, earlier)
        if not await self.store.finished(meta.run_id):  # the watchdog may have ended it meanwhile
            budgets = await self.repo.tenant_settings(record.tenant_id)
            await publish(self.redis, streams.RUNS, requested_for(meta, req, budgets.answer_style))
        metrics.RUNS_RESUMED.inc()
        log.info("run %s: recorded but never marked started; started by the request sent again", meta.run_id)
        return meta

    @staticmethod
    def _mailboxes(record: ApiKeyRecord, req: SearchRequest) -> list[str]:
        """The run's scope: the key's mailboxes, narrowed (never widened) by the filter."""
        if not req.filters.mailboxes:
            return list(record.mailboxes)
        outside = sorted(set(req.filters.mailboxes) - set(record.mailboxes))
        if outside:
            raise Forbidden(f"mailbox {', '.join(outside)} is outside this key's scope")
        return [m for m in record.mailboxes if m in req.filters.mailboxes]

    async def _admit(
        self, record: ApiKeyRecord, req: SearchRequest, mailboxes: list[str], run_id: str,
        before_publish: Callable[[], Awaitable[None]] | None = None,
    ) -> RunMeta:
        """Take the cap, record the run and publish it; ``before_publish`` (the
        idempotency key's started mark) runs between the two and may refuse the run."""
        budgets = await self.repo.tenant_settings(record.tenant_id)
        used = await self.repo.take_cap(record.tenant_id, budgets.daily_cap)
        if used is None:
            metrics.CAP_REFUSED.inc()
            raise CapExhausted(
                f"tenant {record.tenant_id} has used its {budgets.daily_cap} agentic searches for today",
                retry_after=seconds_to_utc_midnight(),
            )
        metrics.CAP_TAKEN.inc()
        if budgets.daily_cap:
            metrics.CAP_USE_RATIO.observe(used / budgets.daily_cap)
        now = time.time()
        deadline = now + budgets.max_seconds
        narrowed = record.model_copy(update={"mailboxes": mailboxes})
        expires_at = deadline + self.settings.deadline_grace_seconds + SCOPE_SLACK_SECONDS
        token = self.searcher.sign(narrowed, run_id=run_id, expires_at=expires_at)
        meta = RunMeta(
            run_id=run_id, tenant_id=record.tenant_id, principal=record.principal, question=req.query,
            scope_token=token, created_at=now, deadline=deadline, max_steps=budgets.max_steps,
            key_id=record.key_id, mailboxes=mailboxes,
        )
        requested = requested_for(meta, req, budgets.answer_style)
        try:
            # Shielded: a client that leaves mid-way does not stop the admission between
            # two of its steps (each on its own hash slot, so no MULTI holds them).
            await asyncio.shield(self._record_and_publish(meta, requested, before_publish))
        except (OutOfMemoryError, IdempotencyKeyInUse):
            await self.repo.give_back_cap(record.tenant_id)
            raise
        metrics.RUNS_STARTED.inc()
        return meta

    async def _record_and_publish(
        self, meta: RunMeta, requested: RunRequested, before_publish: Callable[[], Awaitable[None]] | None
    ) -> None:
        """Record the run (:meth:`RunStore.admit`), then publish it, last: a gateway dying
        before the publication leaves a run the watchdog ends at its deadline, never one
        started twice or never ended. A step refused (Redis full, the idempotency key
        taken) withdraws the record, so a refused request leaves nothing behind; a lost
        connection does not (the publication may have happened): the watchdog settles it."""
        try:
            await self.store.admit(meta, watch_at=meta.deadline + self.settings.deadline_grace_seconds)
            if before_publish is not None:
                await before_publish()
            await publish(self.redis, streams.RUNS, requested)
        except (ResponseError, IdempotencyKeyInUse):
            try:
                await self.store.withdraw(meta)
            except Exception:  # the watchdog ends what is left at the deadline
                log.warning("run %s: could not withdraw the record of a run not started", meta.run_id)
            raise

    async def meta(self, record: ApiKeyRecord, run_id: str) -> RunMeta:
        """The run's record, for a caller who may read it (:func:`may_read`)."""
        meta = await self.store.meta(run_id)
        if meta is None or not may_read(record, meta):
            raise NotFound(f"no run {run_id}")  # someone else's run does not exist for you
        return meta

    async def result(self, run_id: str) -> RunResult | None:
        """The run's result once the verifier announced it (what a client may read)."""
        return await self.store.published_result(run_id)

    async def wait(self, meta: RunMeta, *, live: bool = True) -> RunResult:
        """The finished run; the watchdog guarantees one shortly after the deadline.
        ``live=False`` for a run another request started: its times are not observed again."""
        give_up = meta.deadline + self.settings.deadline_grace_seconds + 10
        last = "0-0"
        seen_evidence = not live
        look = True
        while time.time() < give_up:
            # redis-py can swallow a cancellation that lands inside a blocking read and
            # return as if the read timed out: without this, a wait whose client left
            # would go on (holding its admission slot) until the run's deadline.
            raise_if_cancelled()
            try:
                result = await self.result(meta.run_id) if look else None
                if result is not None:
                    if live:
                        metrics.RUN_SECONDS.labels(result.outcome).observe(time.time() - meta.created_at)
                    return result
                entries = await self.store.read_progress(meta.run_id, last, block_ms=250)
            except _TRANSIENT:
                raise_if_cancelled()
                log.warning("run %s: Redis unavailable while waiting; trying again", meta.run_id)
                await asyncio.sleep(REDIS_RETRY_SECONDS)
                continue
            look = _may_be_done(entries)
            if entries:
                last = entries[-1][0]
                if not seen_evidence and any(getattr(e, "event", None) == "evidence" for _, e in entries):
                    seen_evidence = True
                    metrics.FIRST_EVIDENCE_SECONDS.observe(time.time() - meta.created_at)
        raise UpstreamTimeout(f"run {meta.run_id} did not finish; ask GET /v1/runs/{meta.run_id} later")

    async def cancel(self, record: ApiKeyRecord, run_id: str) -> RunResult | None:
        """Cancel the caller's run: its ``cancelled`` result, or None when the verifier
        has not stored it within :data:`CANCEL_WAIT_SECONDS` (it will). 404 for a run the
        caller may not read; 409 when the run ended otherwise first."""
        return await self._cancel(await self.meta(record, run_id), "cancelled by its owner")

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
        await request_ending(self.redis, meta, "cancelled", note)
        give_up = time.monotonic() + CANCEL_WAIT_SECONDS
        while time.monotonic() < give_up:
            result = await self.result(run_id)
            if result is not None:
                if result.outcome != "cancelled":
                    raise Conflict(f"run {run_id} finished ({result.outcome}) before it could be cancelled")
                return result
            await asyncio.sleep(_POLL_SECONDS)
        return None

    async def events(self, meta: RunMeta, last_event_id: str | None) -> AsyncIterator[dict[str, Any]]:
        """SSE events of the run from after ``last_event_id`` (already validated): the
        stages' ``step`` and ``evidence`` entries, then ``answer`` and ``done`` from the
        stored result. A finished run replays from its stored result at any time.

        ``answer`` and ``done`` carry no id: a client resuming after them gets them again
        rather than a stream that never ends."""
        last = last_event_id or "0-0"
        live = last_event_id is None
        seen_evidence = not live
        give_up = meta.deadline + self.settings.deadline_grace_seconds + 10
        result, look = None, True
        while True:
            raise_if_cancelled()  # as in wait(): a swallowed cancellation still ends the stream
            try:
                if result is None and (look or time.time() >= give_up):
                    result = await self.result(meta.run_id)
                    if result is None and time.time() >= give_up:
                        break
                # Once the result is stored, drain what the stream still holds without
                # blocking, then end with the result.
                entries = await self.store.read_progress(meta.run_id, last, block_ms=None if result else 500)
            except _TRANSIENT:
                raise_if_cancelled()
                if time.time() >= give_up:
                    break
                log.warning("run %s: Redis unavailable while streaming; trying again", meta.run_id)
                await asyncio.sleep(REDIS_RETRY_SECONDS)
                continue
            look = _may_be_done(entries)
            for last, event in entries:
                if event is None or event.event not in RELAYED:
                    continue  # answer/done here are wake-ups: the result is read below
                if event.event == "evidence" and not seen_evidence:
                    seen_evidence = True
                    metrics.FIRST_EVIDENCE_SECONDS.observe(time.time() - meta.created_at)
                yield {"event": event.event, "id": last, "data": json.dumps(event.payload, ensure_ascii=False)}
            if result is not None and not entries:
                if live:
                    metrics.RUN_SECONDS.labels(result.outcome).observe(time.time() - meta.created_at)
                if result.answer is not None:
                    answer = {"answer": result.answer.model_dump(mode="json")}
                    yield {"event": "answer", "data": json.dumps(answer, ensure_ascii=False)}
                yield {"event": "done", "data": json.dumps(result.model_dump(mode="json"), ensure_ascii=False)}
                return
        yield {"event": "error", "data": json.dumps({"detail": "run did not finish in time"})}


def _may_be_done(entries: list[tuple[str, ProgressEvent | None]]) -> bool:
    """Whether the stored result is worth reading after these progress entries: the
    verifier announces ``done`` after storing it; a read that timed out covers an
    announcement that never came (the verifier died between the two)."""
    return not entries or any(event is not None and event.event == "done" for _, event in entries)
