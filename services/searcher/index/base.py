"""The index interface: the one seam between pmsearch and Qdrant.

Two adapters implement :class:`MailIndex` with the same collection layout: Qdrant Edge
in-process (the embedded default, ``edge.py``) and a Qdrant server through
``qdrant-client`` (``server.py``). Nothing outside ``services/searcher/index`` imports a
Qdrant library, and nothing outside ``services/searcher/repository.py`` calls an index:
the repository builds every :class:`IndexFilter` from a verified scope.

Layout: one point per chunk of a message (the body, and each attachment's text), with a
dense vector ``dense`` (cosine) and a sparse BM25 vector ``bm25`` (IDF modifier), and the
payload of :class:`ChunkPayload`. ``tenant_id`` has a tenant payload index
(``is_tenant``); mailbox, thread, sender, folder, date, quarantine and message id are
indexed for filtering.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal, Protocol, Sequence

from pydantic import BaseModel, ConfigDict, Field

IndexMode = Literal["keyword", "semantic", "hybrid"]

POINT_NAMESPACE = uuid.UUID("5b0e1f0e-6d7a-4c1e-9a53-4d2b8f3f7e10")


class ChunkPayload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tenant_id: str
    mailbox: str
    message_id: str  # pmsearch's id for the message: stable per (tenant, Message-ID)
    rfc_message_id: str
    thread_id: str
    subject: str
    normalized_subject: str
    sender: str  # "Name <addr>" as displayed
    sender_email: str  # lower-cased address, for filtering
    recipients: list[str] = Field(default_factory=list)  # lower-cased addresses
    recipient_names: list[str] = Field(default_factory=list)  # "Name <addr>"
    date: datetime | None = None
    date_ts: float | None = None  # Unix seconds, for range filters
    folder: str = "INBOX"
    quarantined: bool = False
    has_attachments: bool = False
    attachment_names: list[str] = Field(default_factory=list)
    kind: Literal["body", "attachment"] = "body"
    attachment_name: str | None = None
    chunk_no: int = 0
    text: str  # this chunk's text
    # The whole part's text (body, or one attachment), stored on chunk 0 only, so that
    # read_message and the run's evidence return the exact source, not re-joined chunks.
    source_text: str | None = None
    in_reply_to: str | None = None
    references: list[str] = Field(default_factory=list)


class Chunk(BaseModel):
    model_config = ConfigDict(extra="forbid")

    payload: ChunkPayload
    dense: list[float]

    @property
    def point_id(self) -> str:
        p = self.payload
        key = f"{p.tenant_id}\x00{p.message_id}\x00{p.kind}\x00{p.attachment_name or ''}\x00{p.chunk_no}"
        return str(uuid.uuid5(POINT_NAMESPACE, key))


class IndexFilter(BaseModel):
    """Conditions every returned point meets. ``tenant_id`` and ``mailboxes`` are
    required; quarantined points are always excluded by the adapter itself."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tenant_id: str = Field(min_length=1)
    mailboxes: tuple[str, ...] = Field(min_length=1)
    folders: tuple[str, ...] | None = None
    senders: tuple[str, ...] | None = None  # lower-cased addresses
    participants: tuple[str, ...] | None = None  # sender or recipient, lower-cased
    date_from: float | None = None
    date_to: float | None = None
    has_attachment: bool | None = None
    thread_ids: tuple[str, ...] | None = None
    message_ids: tuple[str, ...] | None = None
    rfc_message_ids: tuple[str, ...] | None = None
    normalized_subject: str | None = None
    kind: Literal["body", "attachment"] | None = None


class ScoredChunk(BaseModel):
    model_config = ConfigDict(extra="forbid")

    score: float
    payload: ChunkPayload


class MailIndex(Protocol):
    def upsert(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace points (idempotent by point id)."""

    def query(
        self,
        flt: IndexFilter,
        *,
        mode: IndexMode,
        text: str,
        dense: Sequence[float] | None,
        limit: int,
    ) -> list[ScoredChunk]:
        """Best chunks for ``text``: BM25 (keyword), dense (semantic) or both fused by
        reciprocal rank fusion (hybrid). ``dense`` is required unless mode is keyword."""

    def recommend(self, flt: IndexFilter, dense: Sequence[float], limit: int) -> list[ScoredChunk]:
        """Nearest chunks to a vector (find_related)."""

    def scroll(self, flt: IndexFilter, limit: int = 1000) -> list[ChunkPayload]:
        """Payloads of matching points, in no particular order."""

    def vectors(self, flt: IndexFilter, limit: int = 16) -> list[list[float]]:
        """Dense vectors of matching points."""

    def count(self, flt: IndexFilter) -> int:
        ...

    def has_message(self, tenant_id: str, message_id: str) -> bool:
        """Whether any point of this message exists in any mailbox of the tenant,
        quarantined or not. For ingest's idempotency only: it answers existence and
        returns no mail."""

    def close(self) -> None:
        ...
