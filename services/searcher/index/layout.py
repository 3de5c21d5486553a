"""What both adapters must agree on: vector names, payload indexes, fusion constants, and
the conditions an :class:`IndexFilter` stands for.

The conditions are built here once, as plain data, and each adapter only translates them
to its own client's classes, so the two cannot drift apart in what a filter means.
"""

from __future__ import annotations

import re

from dataclasses import dataclass
from typing import Any, Union

from services.searcher.index.base import Chunk, ChunkPayload, IndexFilter

DENSE = "dense"
SPARSE = "bm25"
TENANT_FIELD = "tenant_id"
KEYWORD_FIELDS = (
    "mailbox",
    "message_id",
    "rfc_message_id",
    "thread_id",
    "sender_email",
    "recipients",
    "folder",
    "normalized_subject",
    "kind",
)
BOOL_FIELDS = ("quarantined", "has_attachments")
FLOAT_FIELDS = ("date_ts",)

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

    conditions: tuple["Condition", ...]


Condition = Union[Match, AnyOf, Between, Either]


@dataclass(frozen=True)
class Conditions:
    must: tuple[Condition, ...]
    must_not: tuple[Condition, ...]
    # An empty narrowing tuple (e.g. ``senders=()``) can match nothing; adapters answer
    # empty without asking the engine, whose reading of an empty match-any may differ.
    impossible: bool = False


QUARANTINED = Match("quarantined", True)


def tenant_conditions(tenant_id: str) -> Conditions:
    """The tenant's whole corpus; BM25 IDF statistics are computed over it, so one
    tenant's mail never shifts another tenant's keyword scores."""
    return Conditions(must=(Match(TENANT_FIELD, tenant_id),), must_not=())


def conditions(flt: IndexFilter) -> Conditions:
    """Every condition of ``flt``, and never a quarantined point."""
    must: list[Condition] = [Match(TENANT_FIELD, flt.tenant_id), AnyOf("mailbox", flt.mailboxes)]
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
        must.append(AnyOf("folder", flt.folders))
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


def existence_conditions(tenant_id: str, message_id: str) -> Conditions:
    """Any point of one message in a tenant, quarantined included (ingest's duplicate check)."""
    return Conditions(must=(Match(TENANT_FIELD, tenant_id), Match("message_id", message_id)), must_not=(), impossible=False)


def _lower(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(v.lower() for v in values)


def payload_of(chunk: Chunk) -> dict[str, Any]:
    return chunk.payload.model_dump(mode="json")


def chunk_payload(payload: dict[str, Any] | None) -> ChunkPayload:
    return ChunkPayload.model_validate(payload or {})
