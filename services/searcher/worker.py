"""The searcher worker: runs tools, direct searches and ingest inside a verified scope.

Run with ``python -m services.searcher.worker``. It owns the index (one process owns a
Qdrant Edge folder), so every read and write of mail goes through here.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Callable, TypeVar

from faststream import FastStream

from services.searcher import metrics
from services.searcher.embedding import BatchingEmbedder, make_embedder
from services.searcher.errors import SearcherError
from services.searcher.index import open_index
from services.searcher.ingest.limits import IngestLimits
from services.searcher.ingest.service import Ingester
from services.searcher.repository import ScopedMailRepository
from services.searcher.service import ToolRunner
from shared import streams
from shared.bus import connect, encode, publish
from shared.errors import PmError, ScopeError
from shared.messages import (
    EvidenceMessage,
    EvidenceSummary,
    IngestItem,
    IngestReplied,
    IngestRequested,
    ProgressEvent,
    SearchReplied,
    SearchRequested,
    ToolBatchCompleted,
    ToolBatchRequested,
)
from shared.scope import Scope, verify_scope
from shared.settings import searcher_settings
from shared.telemetry import report_streams, serve_metrics, setup_logging
from shared.tools import TOOLS
from shared.worker import make_broker, subscribe

log = logging.getLogger("pmsearch.searcher")
T = TypeVar("T")

settings = searcher_settings()
broker = make_broker(settings)
redis = connect(settings)
app = FastStream(broker)


class _State:
    runner: ToolRunner
    ingester: Ingester
    pool: ThreadPoolExecutor
    write_lock: asyncio.Lock


state = _State()


async def _off_loop(fn: Callable[..., T], *args: Any) -> T:
    return await asyncio.get_running_loop().run_in_executor(state.pool, partial(fn, *args))


def _scope_for(token: str, tenant_id: str, run_id: str | None, stream: str) -> Scope:
    """The verified scope of a message; its tenant and run must match the message's."""
    try:
        scope = verify_scope(token, settings.scope_key.get_secret_value())
        if scope.tenant_id != tenant_id:
            raise ScopeError("scope token is for another tenant")
        if run_id is not None and scope.run_id != run_id:
            raise ScopeError("scope token is for another run")
    except ScopeError:
        metrics.SCOPE_REFUSED.labels(stream).inc()
        raise
    return scope


async def _reply(request_id: str, reply: Any) -> None:
    key = streams.reply_key(request_id)
    await redis.rpush(key, reply.model_dump_json())
    await redis.expire(key, streams.REPLY_TTL_SECONDS)


async def on_query(req: SearchRequested) -> None:
    started = time.perf_counter()
    try:
        scope = _scope_for(req.scope_token, req.tenant_id, None, streams.QUERIES)
        hits = await _off_loop(state.runner.direct_search, scope, req.query, req.mode, req.filters, req.limit)
        reply = SearchReplied(request_id=req.request_id, ok=True, hits=hits)
        metrics.SEARCHES.labels(req.mode, "ok").inc()
    except PmError as exc:
        metrics.SEARCHES.labels(req.mode, exc.code).inc()
        reply = SearchReplied(
            request_id=req.request_id,
            ok=False,
            error=exc.detail,
            error_code=exc.code,
            status=exc.status,
            widen_attempt=exc.code == "widen_refused",
        )
    reply.took_ms = (time.perf_counter() - started) * 1000
    metrics.SEARCH_SECONDS.labels(req.mode).observe(reply.took_ms / 1000)
    await _reply(req.request_id, reply)


async def on_tools(batch: ToolBatchRequested) -> None:
    try:
        scope = _scope_for(batch.scope_token, batch.tenant_id, batch.run_id, streams.TOOLS)
    except ScopeError as exc:
        # A forged or stale token: act on nothing, leave a trace for operators.
        log.warning("refused tool batch for run %s: %s", batch.run_id, exc.detail)
        await redis.xadd(
            streams.dead_letter(streams.TOOLS),
            {"run_id": batch.run_id, "error": f"scope: {exc.detail}", "deliveries": "1"},
            maxlen=10_000,
            approximate=True,
        )
        return
    runs = await asyncio.gather(*(_off_loop(state.runner.run, scope, call) for call in batch.calls))
    evidence: dict[str, EvidenceMessage] = {}
    for run in runs:
        o = run.outcome
        tool = o.tool if o.tool in TOOLS else "unknown"  # a model-chosen name must not mint labels
        metrics.TOOL_CALLS.labels(tool, "ok" if o.ok else o.error_code or "error").inc()
        metrics.TOOL_SECONDS.labels(tool).observe(o.duration_ms / 1000)
        if o.widen_attempt:
            metrics.WIDEN_ATTEMPTS.labels(tool).inc()
        for m in run.evidence:
            evidence.setdefault(m.message_id, m)
    await _store_evidence(batch.run_id, batch.step, evidence)
    done = ToolBatchCompleted(
        run_id=batch.run_id,
        tenant_id=batch.tenant_id,
        scope_token=batch.scope_token,
        deadline=batch.deadline,
        step=batch.step,
        outcomes=[r.outcome for r in runs],
    )
    await publish(redis, streams.OBSERVATIONS, done)


async def _store_evidence(run_id: str, step: int, evidence: dict[str, EvidenceMessage]) -> None:
    """Every returned message becomes run evidence; each new one is announced once."""
    key = streams.evidence_key(run_id)
    progress = streams.progress_key(run_id)
    for message_id, msg in evidence.items():
        if not await redis.hsetnx(key, message_id, msg.model_dump_json()):
            continue
        metrics.EVIDENCE_STORED.inc()
        summary = EvidenceSummary(
            message_id=msg.message_id,
            thread_id=msg.thread_id,
            sender=msg.sender,
            date=msg.date,
            subject=msg.subject,
            snippet=msg.snippet,
        )
        event = ProgressEvent(event="evidence", payload={"step": step, "message": summary.model_dump(mode="json")})
        await redis.xadd(progress, encode(event), maxlen=10_000, approximate=True)
    await redis.expire(key, streams.RUN_TTL_SECONDS)
    await redis.expire(progress, streams.RUN_TTL_SECONDS)


async def on_ingest(req: IngestRequested) -> None:
    items: list[IngestItem] = []
    raws = []
    for i, b64 in enumerate(req.raw):
        try:
            raws.append((base64.b64decode(b64, validate=True), req.folder, f"#{i}"))
        except ValueError:
            raws.append((b"", req.folder, f"#{i}"))
    async with state.write_lock:
        report = await _off_loop(state.ingester.ingest, req.tenant_id, req.mailbox, raws)
    for item in report.items:
        metrics.INGESTED.labels(item.status).inc()
        items.append(item)
    metrics.MESSAGE_ID_COLLISIONS.inc(report.collisions)
    await _reply(req.request_id, IngestReplied(request_id=req.request_id, items=items))


subscribe(broker, redis, streams.QUERIES, SearchRequested, on_query, concurrency=settings.worker_concurrency)
subscribe(broker, redis, streams.TOOLS, ToolBatchRequested, on_tools, concurrency=settings.worker_concurrency)
subscribe(broker, redis, streams.INGEST, IngestRequested, on_ingest)


def _ingest_limits() -> IngestLimits:
    return IngestLimits(
        max_message_bytes=settings.ingest_max_message_bytes,
        max_attachments=settings.ingest_max_attachments,
        max_text_chars=settings.ingest_max_text_chars,
        max_chunks=settings.ingest_max_chunks,
        extract_timeout_seconds=settings.extract_timeout_seconds,
        parse_timeout_seconds=settings.ingest_parse_timeout_seconds,
        parse_memory_mb=settings.ingest_parse_memory_mb,
    )


@app.on_startup
async def _startup() -> None:
    setup_logging(settings.log_level)
    state.pool = ThreadPoolExecutor(max_workers=settings.tool_concurrency, thread_name_prefix="searcher")
    state.write_lock = asyncio.Lock()
    embedder = make_embedder(settings)
    index = open_index(settings, embedder.dim)
    state.runner = ToolRunner(ScopedMailRepository(index, BatchingEmbedder(embedder)))
    state.ingester = Ingester(index, embedder, settings.chunk_chars, limits=_ingest_limits())
    embedder.embed(["warm up"])  # load the model before the first request, not during it
    if settings.metrics_port:
        serve_metrics(settings.metrics_port)
        asyncio.get_running_loop().create_task(report_streams(redis, [streams.QUERIES, streams.TOOLS, streams.INGEST], streams.GROUP))
    log.info("searcher ready")


if __name__ == "__main__":
    asyncio.run(app.run())
