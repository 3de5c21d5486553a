"""The searcher worker: runs tools, direct searches and ingest inside a verified scope.

Run with ``python -m pmsearch.services.searcher.worker``. It owns the index (one process owns a
Qdrant Edge folder), so every read and write of mail goes through here.
:func:`build_app` wires it from settings, so tests build it against their own Redis.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Callable, TypeVar

from pmsearch.services.searcher import metrics
from pmsearch.services.searcher.embedding import BatchingEmbedder, embedder_id, make_embedder
from pmsearch.services.searcher.index import MailIndex, open_index
from pmsearch.services.searcher.index.base import IndexFilter
from pmsearch.services.searcher.index.layout import EmbedderMismatch
from pmsearch.services.searcher.ingest.limits import IngestLimits
from pmsearch.services.searcher.ingest.service import Ingester
from pmsearch.services.searcher.ingest.withdraw import withdraw
from pmsearch.services.searcher.onnx_embedder import EmbedderUnavailable
from pmsearch.services.searcher.query_cache import QueryEmbeddingCache
from pmsearch.services.searcher.repository import ScopedMailRepository
from pmsearch.services.searcher.service import ToolRunner
from pmsearch.shared import streams
from pmsearch.shared.bus import connect, publish
from pmsearch.shared.errors import PmError, ScopeError
from pmsearch.shared.health import serve
from pmsearch.shared.messages import (
    DeliveryWithdrawn,
    EvidenceMessage,
    IngestItem,
    IngestReplied,
    IngestRequested,
    LookupReplied,
    LookupRequested,
    SearchReplied,
    SearchRequested,
    ToolBatchCompleted,
    ToolBatchRequested,
    ToolCall,
)
from pmsearch.shared.runstore import RunStore
from pmsearch.shared.scope import Scope, verify_scope
from pmsearch.shared.settings import SearcherSettings, searcher_settings
from pmsearch.shared.telemetry import setup_logging
from pmsearch.shared.tools import TOOLS
from pmsearch.shared.worker import Delivery, Policy, Worker

log = logging.getLogger("pmsearch.searcher")
# The readiness probe counts this (normally empty) tenant's points: it touches the
# index and returns a number, never mail.
READY_PROBE = "-readyz-"
T = TypeVar("T")


class Searcher:
    """The searcher's handlers over one index, thread pool and Redis client."""

    runner: ToolRunner
    ingester: Ingester
    index: MailIndex

    def __init__(self, settings: SearcherSettings) -> None:
        self.settings = settings
        self.redis = connect(settings)
        self.pool = ThreadPoolExecutor(max_workers=settings.tool_concurrency, thread_name_prefix="searcher")
        self.write_lock = asyncio.Lock()

    async def setup(self) -> None:
        """Open the index and load the embedding model before the first request."""
        settings = self.settings
        embedder = make_embedder(settings)
        self.index = open_index(settings, embedder.dim, embedder_id(settings))
        queries = QueryEmbeddingCache(BatchingEmbedder(embedder), settings.query_embedding_cache_size)
        metrics.QUERY_EMBEDDING_CACHE.watch(queries.counts)
        self.runner = ToolRunner(ScopedMailRepository(self.index, queries, evidence_max_chars=settings.evidence_max_chars))
        self.ingester = Ingester(self.index, embedder, settings.chunk_chars, limits=_ingest_limits(settings),
                                 trusted_authserv=settings.trusted_authserv)
        embedder.embed(["warm up"])  # load the model before the first request, not during it
        log.info("searcher ready")

    async def check_index(self) -> None:
        """Raise unless the index is open and answers a (tenant-less, empty) count."""
        if getattr(self, "index", None) is None:
            raise RuntimeError("the index is not open yet")
        await self._off_loop(self.index.count, IndexFilter(tenant_id=READY_PROBE, mailboxes=(READY_PROBE,)))

    async def close(self) -> None:
        self.pool.shutdown(wait=True)
        if getattr(self, "index", None) is not None:
            self.index.close()
        await self.redis.aclose()

    async def _off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.pool, partial(fn, *args))

    # ------------------------------------------------------------ handlers

    async def on_query(self, req: SearchRequested, delivery: Delivery) -> None:
        started = time.perf_counter()
        try:
            scope = _scope_for(self.settings, req.scope_token, req.tenant_id, None, streams.QUERIES)
            hits = await self._off_loop(self.runner.direct_search, scope, req.query, req.mode, req.filters, req.limit)
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
        await self._reply(req.request_id, reply)

    async def on_tools(self, batch: ToolBatchRequested, delivery: Delivery) -> None:
        try:
            scope = _scope_for(self.settings, batch.scope_token, batch.tenant_id, batch.run_id, streams.TOOLS)
        except ScopeError as exc:
            # A forged or stale token: act on nothing, leave a trace for operators.
            log.warning("refused tool batch for run %s: %s", batch.run_id, exc.detail)
            await self.redis.xadd(
                streams.dead_letter(streams.TOOLS),
                {"run_id": batch.run_id, "error": f"scope: {exc.detail}", "deliveries": str(delivery.count)},
                maxlen=10_000,
                approximate=True,
            )
            return
        runs = await asyncio.gather(*(self._off_loop(self.runner.run, scope, call) for call in batch.calls))
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
        await self._store_evidence(batch.run_id, batch.step, evidence, batch.deadline)
        done = ToolBatchCompleted(
            run_id=batch.run_id,
            tenant_id=batch.tenant_id,
            scope_token=batch.scope_token,
            deadline=batch.deadline,
            step=batch.step,
            outcomes=[r.outcome for r in runs],
        )
        await publish(self.redis, streams.OBSERVATIONS, done)

    async def on_lookup(self, req: LookupRequested, delivery: Delivery) -> None:
        """A read-only tool call outside a run: no evidence is stored, no run is told."""
        try:
            scope = _scope_for(self.settings, req.scope_token, req.tenant_id, None, streams.LOOKUPS)
        except ScopeError as exc:
            reply = LookupReplied(request_id=req.request_id, error=exc.detail, error_code=exc.code, status=exc.status)
        else:
            call = ToolCall(call_id=req.request_id, tool=req.tool, arguments=req.arguments)
            run = await self._off_loop(self.runner.run, scope, call)
            o = run.outcome
            metrics.TOOL_CALLS.labels(o.tool, "ok" if o.ok else o.error_code or "error").inc()
            metrics.TOOL_SECONDS.labels(o.tool).observe(o.duration_ms / 1000)
            reply = LookupReplied(request_id=req.request_id, outcome=o)
        await self._reply(req.request_id, reply)

    async def on_ingest(self, req: IngestRequested, delivery: Delivery) -> None:
        raws = []
        for i, b64 in enumerate(req.raw):
            try:
                raws.append((base64.b64decode(b64, validate=True), req.folder, f"#{i}"))
            except ValueError:
                raws.append((b"", req.folder, f"#{i}"))
        async with self.write_lock:
            report = await self._off_loop(self.ingester.ingest, req.tenant_id, req.mailbox, raws)
        items: list[IngestItem] = []
        for item in report.items:
            metrics.INGESTED.labels(item.status).inc()
            items.append(item)
        metrics.MESSAGE_ID_COLLISIONS.inc(report.collisions)
        await self._reply(req.request_id, IngestReplied(request_id=req.request_id, items=items,
                                                        index_id=self.index.index_id))

    async def on_withdrawn(self, req: DeliveryWithdrawn, delivery: Delivery) -> None:
        async with self.write_lock:
            removed = await self._off_loop(
                withdraw, self.index, req.tenant_id, req.mailbox, req.folder, req.message_ids
            )
        metrics.WITHDRAWN.inc(removed)

    # ------------------------------------------------------------ Redis writes

    async def _reply(self, request_id: str, reply: Any) -> None:
        key = streams.reply_key(request_id)
        await self.redis.rpush(key, reply.model_dump_json())
        await self.redis.expire(key, streams.REPLY_TTL_SECONDS)

    async def _store_evidence(
        self, run_id: str, step: int, evidence: dict[str, EvidenceMessage], deadline: float
    ) -> None:
        """Every returned message becomes run evidence; each new one is announced once."""
        metrics.EVIDENCE_STORED.inc(await RunStore(self.redis).add_evidence(run_id, step, evidence, deadline))


def _scope_for(settings: SearcherSettings, token: str, tenant_id: str, run_id: str | None, stream: str) -> Scope:
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


def _ingest_limits(settings: SearcherSettings) -> IngestLimits:
    return IngestLimits(
        max_message_bytes=settings.ingest_max_message_bytes,
        max_attachments=settings.ingest_max_attachments,
        max_text_chars=settings.ingest_max_text_chars,
        max_chunks=settings.ingest_max_chunks,
        extract_timeout_seconds=settings.extract_timeout_seconds,
        parse_timeout_seconds=settings.ingest_parse_timeout_seconds,
        parse_memory_mb=settings.ingest_parse_memory_mb,
        max_date_skew_seconds=settings.ingest_max_date_skew_seconds,
    )


def build_app(
    settings: SearcherSettings | None = None,
    *,
    consumer: str | None = None,
    policy: Policy | None = None,
) -> Worker:
    """The searcher's worker; connects as the searcher's own Redis user. The index and
    the embedding model are opened when it starts."""
    settings = settings or searcher_settings()
    worker = Worker(settings, consumer=consumer, policy=policy)
    searcher = Searcher(settings)
    worker.subscribe(streams.QUERIES, SearchRequested, searcher.on_query, concurrency=settings.worker_concurrency)
    worker.subscribe(streams.TOOLS, ToolBatchRequested, searcher.on_tools, concurrency=settings.worker_concurrency)
    worker.subscribe(streams.LOOKUPS, LookupRequested, searcher.on_lookup, concurrency=settings.worker_concurrency)
    # One import at a time: it holds the index's write lock (and minutes of CPU). Raw
    # mail is deleted from the stream once handled, not kept for the trim window.
    worker.subscribe(streams.INGEST, IngestRequested, searcher.on_ingest, forget=True)
    worker.subscribe(streams.WITHDRAWN, DeliveryWithdrawn, searcher.on_withdrawn)
    worker.on_start(searcher.setup)
    worker.check_ready("index", searcher.check_index)
    worker.on_stop(searcher.close)
    return worker


def main() -> None:
    settings = searcher_settings()
    setup_logging(settings, "searcher")
    try:
        serve(build_app(settings), settings)
    except (EmbedderMismatch, EmbedderUnavailable) as exc:
        # The message says what to do; a traceback would only bury it.
        log.error("searcher cannot start: %s", exc)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
