"""The embedded default index: Qdrant Edge, Qdrant's engine in-process, on disk.

One process owns the shard folder. Writes are serialised by a lock; reads run
concurrently in the engine.

Edge has no background optimiser: until :meth:`EdgeIndex.optimize` runs, new points sit
in plain segments that are searched by brute force (fine at a few thousand points, linear
beyond). So upserts optimise by themselves every :data:`OPTIMIZE_AFTER` points.
qdrant-edge-py 0.9 holds the GIL while optimising: the whole process pauses and searches
wait. What bounds the pause is the segment size: Edge's default lets segments grow with
the shard, and each optimisation re-indexed them whole (one pause of 67 s at 100k points
on two cores, 173 s of pauses in a 100k import). Segments capped at
:data:`MAX_SEGMENT_KB` (about 10k points) keep each pause to the points that arrived
since the last one and the merges they need: 3.2 s at most, 29 s in all, for the same
import, and hybrid search p95 11.1 against 13.0 ms over 11 segments instead of 2. Past a
few hundred thousand points a Qdrant server is the better home (docs/scale.md).

Keyword queries weigh terms by BM25 term counts over the caller's scope that this
adapter keeps itself (:mod:`pmsearch.services.searcher.index.idf`): Edge's own scoped IDF
evaluates the scope filter on every query.
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import qdrant_edge as qe

from pmsearch.services.searcher.index import bm25, layout
from pmsearch.services.searcher.index.base import (
    Chunk,
    ChunkPayload,
    IndexFilter,
    IndexMode,
    ScoredChunk,
)
from pmsearch.services.searcher.index.idf import ScopedIdf, group_of

log = logging.getLogger(__name__)

OPTIMIZE_AFTER = 5000  # points
MAX_SEGMENT_KB = 16_000  # a 384-dimension point with its sparse vector and payload is ~1.6 KB

# What a point's IDF group is read from, and a corpus no point is in (see idf.py).
_GROUP_FIELDS = [layout.TENANT_FIELD, "mailboxes", "quarantined"]
_NO_CORPUS = qe.SearchParams(idf=qe.IdfParams(corpus=qe.Filter(must=[qe.HasIdCondition({layout.NO_POINT_ID})])))

_SCHEMA = {
    layout.TENANT_FIELD: lambda: qe.KeywordIndexParams(is_tenant=True),
    **{f: lambda: qe.PayloadSchemaType.Keyword for f in layout.KEYWORD_FIELDS},
    **{f: lambda: qe.PayloadSchemaType.Bool for f in layout.BOOL_FIELDS},
    **{f: lambda: qe.PayloadSchemaType.Float for f in layout.FLOAT_FIELDS},
}


def _bool_value(value: bool) -> np.bool_:
    # qdrant-edge-py 0.9 reads a Python bool in MatchValue as the integer 1/0, and an
    # integer never matches a bool payload: must_not quarantined=True would exclude
    # nothing. numpy's bool is not an int, so it arrives as a real bool.
    return np.bool_(value)


if qe.MatchValue(_bool_value(True)).value is not True:  # pragma: no cover - guards upgrades
    raise ImportError("qdrant_edge MatchValue no longer accepts numpy bools; fix _bool_value")


class EdgeIndex:
    """:class:`pmsearch.services.searcher.index.base.MailIndex` on a Qdrant Edge shard at ``path``
    (created on first use; reopened, and checked against ``dim``, afterwards)."""

    def __init__(
        self,
        path: Path,
        dim: int,
        *,
        optimize_after: int = OPTIMIZE_AFTER,
        optimizers: qe.EdgeOptimizersConfig | None = None,
        embedder: str | None = None,
    ) -> None:
        """``optimize_after`` points written since the last optimisation trigger one
        inside ``upsert``; 0 leaves it to the caller. ``optimizers`` defaults to segments
        capped at :data:`MAX_SEGMENT_KB`.
        ``embedder`` ("<backend>:<model>") is recorded in a shard that names none, and
        must equal the one a shard names (:class:`layout.EmbedderMismatch` otherwise)."""
        self.path = Path(path)
        self.dim = dim
        self._write = threading.Lock()
        config = qe.EdgeConfig(
            vectors={layout.DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)},
            sparse_vectors={layout.SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            optimizers=optimizers or qe.EdgeOptimizersConfig(max_segment_size=MAX_SEGMENT_KB),
        )
        if self.path.is_dir() and any(self.path.iterdir()):
            # Passing the config makes a wrong dimension fail here, not on first upsert.
            try:
                self._shard: qe.EdgeShard | None = qe.EdgeShard.load(str(self.path), config)
            except Exception:
                self._refuse_another_embedder(embedder)  # another model's size: say which, not Qdrant's size error
                raise
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            self._shard = qe.EdgeShard.create(str(self.path), config)
        existing = set(self._shard.info().payload_schema)
        for field, schema in _SCHEMA.items():
            if field not in existing:
                self._shard.update(qe.UpdateOperation.create_field_index(field, schema()))
        self._upgrade_schema(existing)
        self._check_embedder(embedder)
        self._optimize_after = optimize_after
        self._pending = 0
        # Until the counts are read (seconds at 100k points), Edge computes each query's
        # IDF itself; writes wait for the count, so it never misses one.
        self._idf: ScopedIdf | None = None
        self._counted = threading.Event()
        threading.Thread(target=self._count_terms, name="edge-idf", daemon=True).start()

    def wait_counted(self, timeout: float | None = None) -> bool:
        """Block until queries use the kept term counts; False if ``timeout`` passed."""
        return self._counted.wait(timeout)

    def _count_terms(self) -> None:
        with self._write:
            if self._shard is None:
                return
            stats = ScopedIdf()
            offset = None
            while True:
                page, offset = self._shard.scroll(
                    qe.ScrollRequest(offset=offset, limit=2048, with_payload=_GROUP_FIELDS, with_vector=[layout.SPARSE])
                )
                for record in page:
                    stats.count(group_of(record.payload), _terms(record))
                if offset is None or not page:
                    break
            self._idf = stats
            self._counted.set()

    def _upgrade_schema(self, indexed: set[str]) -> None:
        """Bring a shard written by older code to :data:`layout.SCHEMA_VERSION` (payloads
        rewritten in place, vectors and ids untouched), then record the version."""
        shard = self.shard
        found = shard.retrieve([layout.SCHEMA_POINT_ID], True, False)
        version = (found[0].payload or {}).get(layout.SCHEMA_FIELD) if found else None
        if version == layout.SCHEMA_VERSION:
            return
        if version is not None and version > layout.SCHEMA_VERSION:
            raise ValueError(f"index at {self.path} has schema {version}, newer than this code's {layout.SCHEMA_VERSION}")
        moved = 0
        for fields, ids in layout.migration_groups(self._all_payloads()):
            for i in range(0, len(ids), layout.UPSERT_BATCH):
                batch = ids[i : i + layout.UPSERT_BATCH]
                shard.update(qe.UpdateOperation.set_payload(batch, fields))
                shard.update(qe.UpdateOperation.delete_payload(batch, list(layout.LEGACY_FIELDS)))
            moved += len(ids)
        for field in layout.LEGACY_FIELDS:
            if field in indexed:
                shard.update(qe.UpdateOperation.delete_field_index(field))
        if version is None or version < layout.KEYWORDS_OWN_WORDS:
            moved = max(moved, self._rederive_keywords())
        marker = qe.Point(layout.SCHEMA_POINT_ID, {}, {layout.SCHEMA_FIELD: layout.SCHEMA_VERSION})
        shard.update(qe.UpdateOperation.upsert_points([marker]))
        shard.flush()
        if moved:
            log.info("index at %s migrated to schema %d: %d points", self.path, layout.SCHEMA_VERSION, moved)

    def _rederive_keywords(self) -> int:
        done = 0
        for batch in layout.rederived_keywords(self._all_payloads()):
            vectors = [qe.PointVectors(pid, {layout.SPARSE: qe.SparseVector(*sparse)}) for pid, sparse in batch]
            self.shard.update(qe.UpdateOperation.update_vectors(vectors))
            done += len(batch)
        return done

    def _refuse_another_embedder(self, embedder: str | None) -> None:
        """Raise :class:`layout.EmbedderMismatch` if the shard, opened as it is, names
        another embedder than ``embedder``."""
        try:
            shard = qe.EdgeShard.load(str(self.path), None)
        except Exception:
            return
        try:
            found = shard.retrieve([layout.SCHEMA_POINT_ID], True, False)
        finally:
            shard.close()
        recorded = (found[0].payload or {}).get(layout.EMBEDDER_FIELD) if found else None
        layout.needs_embedder_record(recorded, embedder, f"the index at {self.path}")

    def _check_embedder(self, embedder: str | None) -> None:
        """Check (or record) the embedder, and learn (or give) the index's id."""
        found = self.shard.retrieve([layout.SCHEMA_POINT_ID], True, False)
        marker = (found[0].payload or {}) if found else {}
        fields = {}
        if layout.needs_embedder_record(marker.get(layout.EMBEDDER_FIELD), embedder, f"the index at {self.path}"):
            fields[layout.EMBEDDER_FIELD] = embedder
        self.index_id = marker.get(layout.INDEX_ID_FIELD) or fields.setdefault(layout.INDEX_ID_FIELD, layout.new_index_id())
        if fields:
            self.shard.update(qe.UpdateOperation.set_payload([layout.SCHEMA_POINT_ID], fields))
            self.shard.flush()

    def _all_payloads(self):
        offset = None
        while True:
            page, offset = self.shard.scroll(
                qe.ScrollRequest(offset=offset, limit=layout.SCROLL_PAGE, with_payload=True, with_vector=False)
            )
            for record in page:
                yield record.id, record.payload
            if offset is None or not page:
                return

    @property
    def shard(self) -> qe.EdgeShard:
        if self._shard is None:
            raise RuntimeError("index is closed")
        return self._shard

    # -- writes ----------------------------------------------------------------------

    def upsert(self, chunks: Sequence[Chunk]) -> None:
        points, counted = [], []
        for chunk in chunks:
            indices, values = bm25.document_vector(layout.keyword_text(chunk.payload.kind, chunk.payload.text))
            payload = layout.payload_of(chunk)
            points.append(self._point(chunk, payload, indices, values))
            counted.append((chunk.point_id, group_of(payload), indices))
        with self._write:
            for i in range(0, len(points), layout.UPSERT_BATCH):
                # A point written twice in one batch counts once, as the last write.
                latest = {pid: (group, indices) for pid, group, indices in counted[i : i + layout.UPSERT_BATCH]}
                replaced = self._stored(list(latest)) if self._idf is not None else []
                self.shard.update(qe.UpdateOperation.upsert_points(points[i : i + layout.UPSERT_BATCH]))
                if self._idf is not None:
                    self._recount(replaced, -1)
                    for group, indices in latest.values():
                        self._idf.count(group, indices)
            self._pending += len(points)
            if self._optimize_after and self._pending >= self._optimize_after:
                self._optimize_locked()

    def optimize(self) -> bool:
        """Build HNSW and payload indexes and merge segments now; worth calling at the
        end of a large ingest. True if anything changed."""
        with self._write:
            return self._optimize_locked()

    def _optimize_locked(self) -> bool:
        changed = self.shard.optimize()
        self._pending = 0
        return changed

    def flush(self) -> None:
        with self._write:
            self.shard.flush()

    def close(self) -> None:
        with self._write:
            if self._shard is not None:
                self._shard.flush()
                self._shard.close()
                self._shard = None

    def _point(self, chunk: Chunk, payload: dict[str, Any], indices: list[int], values: list[float]) -> qe.Point:
        if len(chunk.dense) != self.dim:
            raise ValueError(f"dense vector has {len(chunk.dense)} dimensions, index has {self.dim}")
        vector = {layout.DENSE: list(chunk.dense), layout.SPARSE: qe.SparseVector(indices, values)}
        return qe.Point(chunk.point_id, vector, payload)

    # -- reads -----------------------------------------------------------------------

    def query(
        self,
        flt: IndexFilter,
        *,
        mode: IndexMode,
        text: str,
        dense: Sequence[float] | None,
        limit: int,
    ) -> list[ScoredChunk]:
        if (cond := layout.query_conditions(flt, mode, dense, limit)) is None:
            return []
        where = edge_filter(cond)
        sparse = bm25.query_vector(text) if mode != "semantic" else ([], [])
        idf = _NO_CORPUS
        if (counts := self._idf) is not None:
            weights = counts.weights(flt.tenant_id, flt.mailboxes, sparse[0])
            sparse = (sparse[0], [v * w for v, w in zip(sparse[1], weights, strict=True)])
        else:
            idf = qe.SearchParams(idf=qe.IdfParams(corpus=edge_filter(layout.idf_corpus(flt))))
        sparse_query = qe.Query.Nearest(qe.SparseVector(*sparse), using=layout.SPARSE)
        if mode == "keyword":
            if not sparse[0]:
                return []
            request = qe.QueryRequest(limit=limit, query=sparse_query, filter=where, params=idf, with_payload=True)
        elif mode == "semantic" or not sparse[0]:
            # A query of stop words only has no keyword side: hybrid degrades to dense.
            request = self._dense_request(where, dense, limit)
        else:
            depth = layout.prefetch_limit(limit)
            request = qe.QueryRequest(
                limit=limit,
                prefetches=[
                    qe.Prefetch(limit=depth, query=sparse_query, filter=where, params=idf),
                    qe.Prefetch(limit=depth, query=_nearest(dense), filter=where),
                ],
                query=qe.Fusion.Rrf(k=layout.RRF_K),
                filter=where,
                with_payload=True,
            )
        return [_scored(p) for p in self.shard.query(request)]

    def recommend(self, flt: IndexFilter, dense: Sequence[float], limit: int) -> list[ScoredChunk]:
        cond = layout.conditions(flt)
        if cond.impossible or limit <= 0:
            return []
        return [_scored(p) for p in self.shard.query(self._dense_request(edge_filter(cond), dense, limit))]

    def scroll(self, flt: IndexFilter, limit: int = 1000) -> list[ChunkPayload]:
        return [layout.chunk_payload(r.payload) for r in self._records(flt, limit, with_vector=False)]

    def vectors(self, flt: IndexFilter, limit: int = 16) -> list[list[float]]:
        """Dense vectors of matching points, lowest chunk numbers first (so a message's
        body vector comes from its opening chunk)."""
        records = self._records(flt, max(limit, layout.SCROLL_PAGE), with_vector=True)
        records.sort(key=lambda r: (r.payload or {}).get("chunk_no", 0))
        return [list(r.vector[layout.DENSE]) for r in records[:limit] if r.vector]

    def count(self, flt: IndexFilter) -> int:
        cond = layout.conditions(flt)
        if cond.impossible:
            return 0
        return self.shard.count(qe.CountRequest(exact=True, filter=edge_filter(cond)))

    def message_copies(self, tenant_id: str, rfc_message_id: str) -> list[ChunkPayload]:
        where = edge_filter(layout.copies_conditions(tenant_id, rfc_message_id))
        page, _ = self.shard.scroll(qe.ScrollRequest(limit=5000, filter=where, with_payload=True, with_vector=False))
        return layout.opening_chunks(r.payload for r in page)

    def set_message_fields(self, tenant_id: str, message_id: str, fields: Mapping[str, Any]) -> None:
        where = edge_filter(layout.message_conditions(tenant_id, message_id))
        with self._write:
            before = self._message_records(where) if self._idf is not None else []
            self.shard.update(qe.UpdateOperation.set_payload_by_filter(where, dict(fields)))
            if self._idf is not None:
                self._recount(before, -1)
                self._recount(self._message_records(where), 1)

    def _stored(self, ids: list[Any]) -> list[qe.Record]:
        return self.shard.retrieve(ids, _GROUP_FIELDS, [layout.SPARSE])

    def _message_records(self, where: qe.Filter) -> list[qe.Record]:
        page, _ = self.shard.scroll(
            qe.ScrollRequest(limit=5000, filter=where, with_payload=_GROUP_FIELDS, with_vector=[layout.SPARSE])
        )
        return page

    def _recount(self, records: Sequence[qe.Record], sign: int) -> None:
        assert self._idf is not None
        for record in records:
            self._idf.count(group_of(record.payload), _terms(record), sign)

    def _dense_request(self, where: qe.Filter, dense: Sequence[float] | None, limit: int) -> qe.QueryRequest:
        if dense is None:
            raise ValueError("a dense vector is required")
        return qe.QueryRequest(limit=limit, query=_nearest(dense), filter=where, with_payload=True)

    def _records(self, flt: IndexFilter, limit: int, *, with_vector: bool) -> list[qe.Record]:
        cond = layout.conditions(flt)
        if cond.impossible or limit <= 0:
            return []
        where = edge_filter(cond)
        out: list[qe.Record] = []
        offset = None
        while len(out) < limit:
            page, offset = self.shard.scroll(
                qe.ScrollRequest(
                    offset=offset,
                    limit=min(layout.SCROLL_PAGE, limit - len(out)),
                    filter=where,
                    with_payload=True,
                    with_vector=[layout.DENSE] if with_vector else False,
                )
            )
            out.extend(page)
            if offset is None or not page:
                break
        return out


def _terms(record: qe.Record) -> list[int]:
    vector = (record.vector or {}).get(layout.SPARSE)
    return list(vector.indices) if vector is not None else []


def _nearest(dense: Sequence[float]) -> qe.Query:
    return qe.Query.Nearest([float(x) for x in dense], using=layout.DENSE)


def _scored(point: qe.ScoredPoint) -> ScoredChunk:
    return ScoredChunk(score=point.score, payload=layout.chunk_payload(point.payload))


@lru_cache(maxsize=1024)
def edge_filter(cond: layout.Conditions) -> qe.Filter:
    # Built once per distinct conditions: the scope's filter comes back query after
    # query, and building Edge's filter objects was a twentieth of a loaded searcher.
    return qe.Filter(
        must=[_condition(c) for c in cond.must] or None,
        must_not=[_condition(c) for c in cond.must_not] or None,
    )


def _condition(c: layout.Condition):
    if isinstance(c, layout.Match):
        value = _bool_value(c.value) if isinstance(c.value, bool) else c.value
        return qe.FieldCondition(c.key, match=qe.MatchValue(value))
    if isinstance(c, layout.AnyOf):
        return qe.FieldCondition(c.key, match=qe.MatchAny(list(c.values)))
    if isinstance(c, layout.Between):
        return qe.FieldCondition(c.key, range=qe.RangeFloat(gte=c.gte, lte=c.lte))
    if isinstance(c, layout.Either):
        return qe.Filter(should=[_condition(x) for x in c.conditions])
    raise TypeError(f"unknown condition {c!r}")
