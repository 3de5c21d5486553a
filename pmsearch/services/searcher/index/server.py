"""The scale-out index: a Qdrant server or cluster through ``qdrant-client``.

Same collection layout, same sparse BM25 vectors (computed client-side by
:mod:`pmsearch.services.searcher.index.bm25`) and same filter conditions as the Edge adapter.
``QdrantClient(location=":memory:")`` works as a stand-in in tests, but is far too slow to
serve, and knows no shards.

On a cluster a new collection is laid out by :class:`Sharding`: its shard count and
replication factor, and, sharded by tenant, custom shard keys: each tenant's points are
written under a shard key of its own (created with its first point), the collection's
marker under :data:`META_KEY`. Reads name no shard key and search every shard (a tenant
filter still applies): a tenant's shard key may not exist yet, and a query never has to
know where a tenant lives.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Mapping, Sequence

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import UnexpectedResponse

from pmsearch.services.searcher.index import bm25, layout
from pmsearch.services.searcher.index.base import (
    Chunk,
    ChunkPayload,
    IndexFilter,
    IndexMode,
    ScoredChunk,
)

log = logging.getLogger(__name__)


def _schema(field: str) -> models.PayloadSchemaType | models.KeywordIndexParams:
    if field == layout.TENANT_FIELD:
        return models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)
    if field in layout.BOOL_FIELDS:
        return models.PayloadSchemaType.BOOL
    if field in layout.FLOAT_FIELDS:
        return models.PayloadSchemaType.FLOAT
    return models.PayloadSchemaType.KEYWORD


_INDEXED = (layout.TENANT_FIELD, *layout.KEYWORD_FIELDS, *layout.BOOL_FIELDS, *layout.FLOAT_FIELDS)
# The shard key of the collection's own marker point (schema, embedder, index id) when
# sharded by tenant: no tenant's, as a tenant id starts with a letter or digit
# (pmsearch/services/gateway/admin/schemas.py).
META_KEY = "_pmsearch"


@dataclass(frozen=True)
class Sharding:
    """How a new collection is spread over a cluster: ``shards`` (per shard key when
    ``by_tenant``) and ``replication`` copies of each, None for the server's default."""

    shards: int | None = None
    replication: int | None = None
    by_tenant: bool = False


class ServerIndex:
    """:class:`pmsearch.services.searcher.index.base.MailIndex` on collection ``collection``,
    created with the shared layout if missing; an existing one must have ``dim``, and
    name ``embedder`` if it names one (see :class:`pmsearch.services.searcher.index.edge.EdgeIndex`)."""

    def __init__(
        self, client: QdrantClient, collection: str, dim: int, *, embedder: str | None = None,
        sharding: Sharding = Sharding(),
    ) -> None:
        self.client = client
        self.collection = collection
        self.dim = dim
        self.sharding = sharding
        self._shard_keys: set[str] = set()  # the tenant shard keys known to exist
        if client.collection_exists(collection):
            # Another embedder's vectors (often of another size): say which before the size check does.
            found = client.retrieve(collection, [layout.SCHEMA_POINT_ID], with_payload=True)
            recorded = (found[0].payload or {}).get(layout.EMBEDDER_FIELD) if found else None
            layout.needs_embedder_record(recorded, embedder, f"collection {collection!r}")
            self._check_layout()
        else:
            try:
                client.create_collection(
                    collection,
                    vectors_config={layout.DENSE: models.VectorParams(size=dim, distance=models.Distance.COSINE)},
                    sparse_vectors_config={layout.SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
                    shard_number=sharding.shards,
                    replication_factor=sharding.replication,
                    sharding_method=models.ShardingMethod.CUSTOM if sharding.by_tenant else None,
                )
            except UnexpectedResponse as exc:
                # Two replicas starting together both saw no collection; the other one
                # created it first. Its layout must still be ours.
                if exc.status_code != HTTPStatus.CONFLICT:
                    raise
                log.info("collection %s was created by another replica meanwhile", collection)
                self._check_layout()
        self._meta = self._shard_key(META_KEY)
        existing = set(client.get_collection(collection).payload_schema or {})
        for field in _INDEXED:
            if field not in existing:
                client.create_payload_index(collection, field, _schema(field), wait=True)
        self._upgrade_schema(existing)
        self._check_embedder(embedder)

    def _check_embedder(self, embedder: str | None) -> None:
        """Check (or record) the embedder, and learn (or give) the collection's id."""
        found = self._marker()
        marker = (found[0].payload or {}) if found else {}
        fields = {}
        if layout.needs_embedder_record(marker.get(layout.EMBEDDER_FIELD), embedder, f"collection {self.collection!r}"):
            fields[layout.EMBEDDER_FIELD] = embedder
        # Two replicas giving a new collection its id at once: the last write wins, and
        # both read it back, so they agree.
        if not marker.get(layout.INDEX_ID_FIELD):
            fields[layout.INDEX_ID_FIELD] = layout.new_index_id()
        if fields:
            self.client.set_payload(
                self.collection, payload=fields, points=[layout.SCHEMA_POINT_ID], wait=True, shard_key_selector=self._meta
            )
            found = self._marker()
            marker = (found[0].payload or {}) if found else {}
        self.index_id = str(marker.get(layout.INDEX_ID_FIELD))

    def _upgrade_schema(self, indexed: set[str]) -> None:
        """Bring a collection written by older code to :data:`layout.SCHEMA_VERSION`
        (payloads rewritten in place, vectors and ids untouched), then record the version."""
        found = self._marker()
        version = (found[0].payload or {}).get(layout.SCHEMA_FIELD) if found else None
        if version == layout.SCHEMA_VERSION:
            return
        if version is not None and version > layout.SCHEMA_VERSION:
            raise ValueError(
                f"collection {self.collection!r} has schema {version}, newer than this code's {layout.SCHEMA_VERSION}"
            )
        moved = 0
        for fields, ids in layout.migration_groups(self._all_payloads()):
            for i in range(0, len(ids), layout.UPSERT_BATCH):
                batch = ids[i : i + layout.UPSERT_BATCH]
                self.client.set_payload(self.collection, payload=fields, points=batch, wait=True)
                self.client.delete_payload(self.collection, keys=list(layout.LEGACY_FIELDS), points=batch, wait=True)
            moved += len(ids)
        for field in layout.LEGACY_FIELDS:
            if field in indexed:
                self.client.delete_payload_index(self.collection, field, wait=True)
        if version is None or version < layout.KEYWORDS_OWN_WORDS:
            moved = max(moved, self._rederive_keywords())
        marker = models.PointStruct(id=layout.SCHEMA_POINT_ID, vector={}, payload={layout.SCHEMA_FIELD: layout.SCHEMA_VERSION})
        self.client.upsert(self.collection, [marker], wait=True, shard_key_selector=self._meta)
        if moved:
            log.info("collection %s migrated to schema %d: %d points", self.collection, layout.SCHEMA_VERSION, moved)

    def _rederive_keywords(self) -> int:
        done = 0
        for batch in layout.rederived_keywords(self._all_payloads()):
            vectors = [
                models.PointVectors(id=pid, vector={layout.SPARSE: models.SparseVector(indices=sparse[0], values=sparse[1])})
                for pid, sparse in batch
            ]
            self.client.update_vectors(self.collection, points=vectors, wait=True)
            done += len(batch)
        return done

    def _all_payloads(self):
        offset = None
        while True:
            page, offset = self.client.scroll(
                self.collection, limit=layout.SCROLL_PAGE, offset=offset, with_payload=True, with_vectors=False
            )
            for record in page:
                yield record.id, record.payload
            if offset is None or not page:
                return

    def _marker(self) -> list[models.Record]:
        return self.client.retrieve(
            self.collection, [layout.SCHEMA_POINT_ID], with_payload=True, shard_key_selector=self._meta
        )

    def _shard_key(self, key: str) -> str | None:
        """``key`` as the shard key of the points written under it, created on first use,
        when the collection is sharded by tenant; None (no key) otherwise."""
        if not self.sharding.by_tenant:
            return None
        if key not in self._shard_keys:
            try:
                self.client.create_shard_key(
                    self.collection, key, shards_number=self.sharding.shards,
                    replication_factor=self.sharding.replication,
                )
            except UnexpectedResponse as exc:
                # Another replica created it first, or this one did before a restart.
                if exc.status_code not in (HTTPStatus.BAD_REQUEST, HTTPStatus.CONFLICT) or "exist" not in str(exc):
                    raise
            self._shard_keys.add(key)
        return key

    def _check_layout(self) -> None:
        params = self.client.get_collection(self.collection).config.params
        dense = params.vectors.get(layout.DENSE) if isinstance(params.vectors, dict) else None
        sparse = (params.sparse_vectors or {}).get(layout.SPARSE)
        if dense is None or dense.size != self.dim:
            raise ValueError(f"collection {self.collection!r} has no {self.dim}-d {layout.DENSE!r} vector")
        if sparse is None or sparse.modifier != models.Modifier.IDF:
            raise ValueError(f"collection {self.collection!r} has no IDF {layout.SPARSE!r} sparse vector")

    # -- writes ----------------------------------------------------------------------

    def upsert(self, chunks: Sequence[Chunk]) -> None:
        by_tenant: dict[str, list[models.PointStruct]] = defaultdict(list)
        for c in chunks:
            by_tenant[c.payload.tenant_id if self.sharding.by_tenant else ""].append(self._point(c))
        for tenant, points in by_tenant.items():
            key = self._shard_key(tenant) if tenant else None
            for i in range(0, len(points), layout.UPSERT_BATCH):
                self.client.upsert(self.collection, points[i : i + layout.UPSERT_BATCH], wait=True, shard_key_selector=key)

    def close(self) -> None:
        self.client.close()

    def _point(self, chunk: Chunk) -> models.PointStruct:
        if len(chunk.dense) != self.dim:
            raise ValueError(f"dense vector has {len(chunk.dense)} dimensions, index has {self.dim}")
        indices, values = bm25.document_vector(layout.keyword_text(chunk.payload.kind, chunk.payload.text))
        return models.PointStruct(
            id=chunk.point_id,
            vector={
                layout.DENSE: list(chunk.dense),
                layout.SPARSE: models.SparseVector(indices=indices, values=values),
            },
            payload=layout.payload_of(chunk),
        )

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
        where = _filter(cond)
        indices, values = bm25.query_vector(text) if mode != "semantic" else ([], [])
        sparse = models.SparseVector(indices=indices, values=values)
        idf = models.SearchParams(idf=models.IdfCorpusParams(corpus=_filter(layout.idf_corpus(flt))))
        if mode == "keyword":
            if not indices:
                return []
            kwargs = dict(query=sparse, using=layout.SPARSE, search_params=idf)
        elif mode == "semantic" or not indices:
            # A query of stop words only has no keyword side: hybrid degrades to dense.
            kwargs = dict(query=[float(x) for x in dense], using=layout.DENSE)
        else:
            depth = layout.prefetch_limit(limit)
            kwargs = dict(
                prefetch=[
                    models.Prefetch(query=sparse, using=layout.SPARSE, filter=where, limit=depth, params=idf),
                    models.Prefetch(query=[float(x) for x in dense], using=layout.DENSE, filter=where, limit=depth),
                ],
                query=models.RrfQuery(rrf=models.Rrf(k=layout.RRF_K)),
            )
        response = self.client.query_points(
            self.collection, query_filter=where, limit=limit, with_payload=True, **kwargs
        )
        return [_scored(p) for p in response.points]

    def recommend(self, flt: IndexFilter, dense: Sequence[float], limit: int) -> list[ScoredChunk]:
        cond = layout.conditions(flt)
        if cond.impossible or limit <= 0:
            return []
        response = self.client.query_points(
            self.collection,
            query=[float(x) for x in dense],
            using=layout.DENSE,
            query_filter=_filter(cond),
            limit=limit,
            with_payload=True,
        )
        return [_scored(p) for p in response.points]

    def scroll(self, flt: IndexFilter, limit: int = 1000) -> list[ChunkPayload]:
        return [layout.chunk_payload(r.payload) for r in self._records(flt, limit, with_vector=False)]

    def vectors(self, flt: IndexFilter, limit: int = 16) -> list[list[float]]:
        """Dense vectors of matching points, lowest chunk numbers first (so a message's
        body vector comes from its opening chunk)."""
        records = self._records(flt, max(limit, layout.SCROLL_PAGE), with_vector=True)
        records.sort(key=lambda r: (r.payload or {}).get("chunk_no", 0))
        out = []
        for r in records[:limit]:
            vector = r.vector.get(layout.DENSE) if isinstance(r.vector, dict) else None
            if vector is not None:
                out.append(list(vector))
        return out

    def count(self, flt: IndexFilter) -> int:
        cond = layout.conditions(flt)
        if cond.impossible:
            return 0
        return self.client.count(self.collection, count_filter=_filter(cond), exact=True).count

    def message_copies(self, tenant_id: str, rfc_message_id: str) -> list[ChunkPayload]:
        where = _filter(layout.copies_conditions(tenant_id, rfc_message_id))
        page, _ = self.client.scroll(self.collection, scroll_filter=where, limit=5000, with_payload=True, with_vectors=False)
        return layout.opening_chunks(r.payload for r in page)

    def set_message_fields(self, tenant_id: str, message_id: str, fields: Mapping[str, Any]) -> None:
        where = _filter(layout.message_conditions(tenant_id, message_id))
        # No shard key: an update by filter reaches every shard, and the filter names the tenant.
        self.client.set_payload(self.collection, payload=dict(fields), points=where, wait=True)

    def _records(self, flt: IndexFilter, limit: int, *, with_vector: bool) -> list[models.Record]:
        cond = layout.conditions(flt)
        if cond.impossible or limit <= 0:
            return []
        where = _filter(cond)
        out: list[models.Record] = []
        offset = None
        while len(out) < limit:
            page, offset = self.client.scroll(
                self.collection,
                scroll_filter=where,
                limit=min(layout.SCROLL_PAGE, limit - len(out)),
                offset=offset,
                with_payload=True,
                with_vectors=[layout.DENSE] if with_vector else False,
            )
            out.extend(page)
            if offset is None or not page:
                break
        return out


def _scored(point: models.ScoredPoint) -> ScoredChunk:
    return ScoredChunk(score=point.score, payload=layout.chunk_payload(point.payload))


def _filter(cond: layout.Conditions) -> models.Filter:
    return models.Filter(
        must=[_condition(c) for c in cond.must] or None,
        must_not=[_condition(c) for c in cond.must_not] or None,
    )


def _condition(c: layout.Condition) -> models.Condition:
    if isinstance(c, layout.Match):
        return models.FieldCondition(key=c.key, match=models.MatchValue(value=c.value))
    if isinstance(c, layout.AnyOf):
        return models.FieldCondition(key=c.key, match=models.MatchAny(any=list(c.values)))
    if isinstance(c, layout.Between):
        return models.FieldCondition(key=c.key, range=models.Range(gte=c.gte, lte=c.lte))
    if isinstance(c, layout.Either):
        return models.Filter(should=[_condition(x) for x in c.conditions])
    raise TypeError(f"unknown condition {c!r}")
