"""What both adapters must agree on: vector names, payload indexes, fusion constants, and
the conditions an :class:`IndexFilter` stands for.

The conditions are built here once, as plain data, and each adapter only translates them
to its own client's classes, so the two cannot drift apart in what a filter means.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Iterator

from pmsearch.services.searcher.index import bm25
from pmsearch.services.searcher.index.base import (
    POINT_NAMESPACE,
    Chunk,
    ChunkPayload,
    IndexFilter,
    delivery_fields,
    delivery_key,
    single_delivery,
)
from pmsearch.shared.mail_parts import searchable_text

DENSE = "dense"
SPARSE = "bm25"
TENANT_FIELD = "tenant_id"
KEYWORD_FIELDS = (
    "mailboxes",
    "deliveries",
    "message_id",
    "rfc_message_id",
    "thread_id",
    "sender_email",
    "recipients",
    "normalized_subject",
    "kind",
)
BOOL_FIELDS = ("quarantined", "has_attachments")
FLOAT_FIELDS = ("date_ts",)

# Version 1: one ``mailbox`` and ``folder`` per message, messages keyed by (tenant,
# Message-ID). Version 2: deliveries and content digests. The version lives in the
# collection itself, on a point with no vector and no tenant (so no filter ever matches
# it); an index without it that holds points was written by version 1.
SCHEMA_VERSION = 4
# Version 3: a body point's keyword (BM25) vector is made from the sender's own words
# (:func:`keyword_text`), not from what the message quotes; an older index has its
# keyword vectors made again when opened (payloads, dense vectors and ids untouched).
# Version 4: the same words, read by a splitter that knows more of mail's furniture
# (cover letters' shortlogs, bare attributions); the keyword vectors are made again.
KEYWORDS_OWN_WORDS = 4
SCHEMA_FIELD = "pmsearch_schema"
SCHEMA_POINT_ID = str(uuid.uuid5(POINT_NAMESPACE, "pmsearch schema version"))
LEGACY_FIELDS = ("mailbox", "folder")
# An id no point is ever written under: a filter on it matches nothing (see idf.py).
NO_POINT_ID = str(uuid.uuid5(POINT_NAMESPACE, "pmsearch no point"))
# Which embedder wrote the dense vectors ("<backend>:<model>"), on the same marker point:
# a query vector from another model lands somewhere meaningless, so semantic search
# would answer wrongly instead of failing.
EMBEDDER_FIELD = "pmsearch_embedder"
# A random id the index gets when first opened: what `pmsearch ingest` keys its record of
# imported files by, so a rebuilt or replaced index is never taken for the one it fed.
INDEX_ID_FIELD = "pmsearch_index_id"


def new_index_id() -> str:
    return uuid.uuid4().hex


class EmbedderMismatch(ValueError):
    """The index was embedded by another embedder than the one configured to query it."""


def needs_embedder_record(recorded: str | None, configured: str | None, where: str) -> bool:
    """True when ``configured`` should be recorded (the index names no embedder yet: new,
    or written before the record existed); raises :class:`EmbedderMismatch` when the
    index names another one."""
    if recorded is not None and recorded.startswith("local:"):  # the torch backend's earlier name
        recorded = "torch:" + recorded.removeprefix("local:")
    if configured is None or recorded == configured:
        return False
    if recorded is None:
        return True
    backend, _, model = recorded.partition(":")
    raise EmbedderMismatch(
        f"{where} was embedded by {recorded}, but the searcher is configured for {configured}. "
        f"Set PM_EMBEDDING_BACKEND={backend} PM_EMBEDDING_MODEL={model} to search it, or move it: "
        "`pmsearch reembed` with the searcher stopped (an Edge index), or a new PM_COLLECTION on a Qdrant "
        "server and the mail imported again with `pmsearch ingest PATH --tenant T --mailbox M`."
    )

# The usual constant from the RRF paper; set explicitly because Qdrant's default (2)
# lets a single list's top hit dominate the fused order.
RRF_K = 60
UPSERT_BATCH = 256
SCROLL_PAGE = 512


def prefetch_limit(limit: int) -> int:
    """Candidates each side of a hybrid query contributes to fusion."""
    return min(max(limit * 2, 50), 1000)


@dataclass(frozen=True)
class Match:
    key: str
    value: str | bool


@dataclass(frozen=True)
class AnyOf:
    key: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Between:
    key: str
    gte: float | None
    lte: float | None


@dataclass(frozen=True)
class Either:
    """At least one of ``conditions`` holds."""

    conditions: tuple[Condition, ...]


Condition = Match | AnyOf | Between | Either


@dataclass(frozen=True)
class Conditions:
    must: tuple[Condition, ...]
    must_not: tuple[Condition, ...]
    # An empty narrowing tuple (e.g. ``senders=()``) can match nothing; adapters answer
    # empty without asking the engine, whose reading of an empty match-any may differ.
    impossible: bool = False


QUARANTINED = Match("quarantined", True)


def idf_corpus(flt: IndexFilter) -> Conditions:
    """The points BM25's IDF statistics are computed over: the mailboxes of ``flt``
    (the caller's scope, or the part of it they narrowed to), quarantined mail left out.
    Statistics over anything wider would let a score tell whether a term occurs in mail
    the caller cannot see."""
    return conditions(IndexFilter(tenant_id=flt.tenant_id, mailboxes=flt.mailboxes))


def query_conditions(flt: IndexFilter, mode: str, dense: object | None, limit: int) -> Conditions | None:
    """The conditions of one query, the same guard for every adapter: None when it can
    match nothing (an empty narrowing, no limit), ValueError when a semantic or hybrid
    query comes without its dense vector."""
    cond = conditions(flt)
    if cond.impossible or limit <= 0:
        return None
    if mode != "keyword" and dense is None:
        raise ValueError(f"{mode} query needs a dense vector")
    return cond


def conditions(flt: IndexFilter) -> Conditions:
    """Every condition of ``flt``, and never a quarantined point."""
    must: list[Condition] = [Match(TENANT_FIELD, flt.tenant_id), AnyOf("mailboxes", flt.mailboxes)]
    groups: list[tuple[str, ...] | None] = [
        flt.mailboxes,
        flt.folders,
        flt.senders,
        flt.participants,
        flt.thread_ids,
        flt.message_ids,
        flt.rfc_message_ids,
    ]
    impossible = any(g is not None and len(g) == 0 for g in groups)
    if flt.folders is not None:
        # A folder counts only inside the filter's mailboxes: a message filed in bob's
        # Archive is not in alice's Archive because alice also received it.
        pairs = tuple(delivery_key(m, f) for m in flt.mailboxes for f in flt.folders)
        must.append(AnyOf("deliveries", pairs))
    if flt.senders is not None:
        must.append(AnyOf("sender_email", _lower(flt.senders)))
    if flt.participants is not None:
        people = _lower(flt.participants)
        must.append(Either((AnyOf("sender_email", people), AnyOf("recipients", people))))
    if flt.date_from is not None or flt.date_to is not None:
        must.append(Between("date_ts", flt.date_from, flt.date_to))
    if flt.has_attachment is not None:
        must.append(Match("has_attachments", flt.has_attachment))
    if flt.thread_ids is not None:
        must.append(AnyOf("thread_id", flt.thread_ids))
    if flt.message_ids is not None:
        must.append(AnyOf("message_id", flt.message_ids))
    if flt.rfc_message_ids is not None:
        must.append(AnyOf("rfc_message_id", flt.rfc_message_ids))
    if flt.normalized_subject is not None:
        must.append(Match("normalized_subject", flt.normalized_subject))
    if flt.kind is not None:
        must.append(Match("kind", flt.kind))
    return Conditions(must=tuple(must), must_not=(QUARANTINED,), impossible=impossible)


def copies_conditions(tenant_id: str, rfc_message_id: str) -> Conditions:
    """Every point with this Message-ID in a tenant, quarantined included (ingest only)."""
    return Conditions(must=(Match(TENANT_FIELD, tenant_id), Match("rfc_message_id", rfc_message_id)), must_not=())


def message_conditions(tenant_id: str, message_id: str) -> Conditions:
    """Every point of one message, quarantined included (ingest's delivery updates)."""
    return Conditions(must=(Match(TENANT_FIELD, tenant_id), Match("message_id", message_id)), must_not=())


def opening_chunks(payloads: Iterable[dict[str, Any] | None]) -> list[ChunkPayload]:
    return [chunk_payload(p) for p in payloads if p and p.get("chunk_no", 0) == 0]


def migration_groups(points: Iterable[tuple[Hashable, dict[str, Any] | None]]) -> list[tuple[dict[str, Any], list[Hashable]]]:
    """For the version-1 points among ``points`` (id, payload): the version-2 fields to
    set, each with the ids that get them. Every chunk of a version-1 message had the same
    mailbox, folder and flag, so a handful of groups covers a whole mailbox. The message
    ids stay as they were (runs and answers cite them); ``content_digest`` stays unset
    until a re-import of the same content supplies it."""
    groups: dict[str, tuple[dict[str, Any], list[Hashable]]] = {}
    for point_id, payload in points:
        if not payload or "mailbox" not in payload or TENANT_FIELD not in payload:
            continue
        one = single_delivery({k: payload.get(k) for k in ("mailbox", "folder", "quarantined")})
        fields = delivery_fields(one["deliveries"], one["quarantined_deliveries"])
        key = json.dumps(fields, sort_keys=True)
        groups.setdefault(key, (fields, []))[1].append(point_id)
    return list(groups.values())


def _lower(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(v.lower() for v in values)


def keyword_text(kind: str | None, text: str) -> str:
    """The text a point's keyword vector is made from: for a piece of a body, what its
    sender wrote (and its patch, and a message it forwards), not what it quotes."""
    return searchable_text(text) if kind == "body" else text


def rederived_keywords(
    points: Iterable[tuple[Hashable, dict[str, Any] | None]],
) -> Iterator[list[tuple[Hashable, tuple[list[int], list[float]]]]]:
    """Batches of (point id, keyword vector made again by :func:`keyword_text`) for
    every mail point of ``points`` (the schema marker has no tenant)."""
    batch: list[tuple[Hashable, tuple[list[int], list[float]]]] = []
    for point_id, payload in points:
        if not payload or TENANT_FIELD not in payload:
            continue
        batch.append((point_id, bm25.document_vector(keyword_text(payload.get("kind"), payload.get("text") or ""))))
        if len(batch) >= UPSERT_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def payload_of(chunk: Chunk) -> dict[str, Any]:
    return chunk.payload.model_dump(mode="json")


def chunk_payload(payload: dict[str, Any] | None) -> ChunkPayload:
    return ChunkPayload.model_validate(payload or {})
