"""The index interface: the one seam between pmsearch and Qdrant.

Two adapters implement :class:`MailIndex` with the same collection layout: Qdrant Edge
in-process (the embedded default, ``edge.py``) and a Qdrant server through
``qdrant-client`` (``server.py``). Nothing outside ``pmsearch/services/searcher/index`` imports a
Qdrant library, and nothing outside ``pmsearch/services/searcher/repository.py`` calls an index:
the repository builds every :class:`IndexFilter` from a verified scope.

Layout: one point per chunk of a message (the body, and each attachment's text), with a
dense vector ``dense`` (cosine) and a sparse BM25 vector ``bm25`` (IDF modifier), and the
payload of :class:`ChunkPayload`. ``tenant_id`` has a tenant payload index
(``is_tenant``); mailboxes, deliveries, thread, sender, date, quarantine and message id
are indexed for filtering. A message is one set of points however many mailboxes it was
delivered to: its payload lists every (mailbox, folder) delivery. The layout's version
is recorded in the collection (see ``layout.SCHEMA_VERSION``); an older index is
migrated when it is opened.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any, Iterable, Literal, Mapping, Protocol, Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

IndexMode = Literal["keyword", "semantic", "hybrid"]

POINT_NAMESPACE = uuid.UUID("5b0e1f0e-6d7a-4c1e-9a53-4d2b8f3f7e10")


def delivery_key(mailbox: str, folder: str) -> str:
    """One (mailbox, folder) delivery as a keyword value; JSON, so no mailbox or folder
    name can make two different pairs spell the same key."""
    return json.dumps([mailbox, folder], ensure_ascii=False, separators=(",", ":"))


def parse_delivery(key: str) -> tuple[str, str]:
    mailbox, folder = json.loads(key)
    return mailbox, folder


class ChunkPayload(BaseModel):
    """What each point of a message carries. ``mailboxes`` and ``quarantined`` are
    derived from the deliveries, so they can never disagree with them."""

    model_config = ConfigDict(extra="forbid")

    tenant_id: str
    message_id: str  # pmsearch's id: stable per (tenant, Message-ID, content digest)
    rfc_message_id: str
    # sha256 of the message's content (identity.content_digest); None for a message
    # indexed before schema 2, whose content ingest compares field by field instead.
    content_digest: str | None = None
    deliveries: list[str] = Field(default_factory=list)  # delivery_key()s, not quarantined
    quarantined_deliveries: list[str] = Field(default_factory=list)  # recorded, shown nowhere
    mailboxes: list[str] = Field(default_factory=list)  # derived: mailboxes of ``deliveries``
    thread_id: str
    subject: str
    normalized_subject: str
    sender: str  # "Name <addr>" as displayed
    sender_email: str  # lower-cased address, for filtering
    # Whether a trusted MTA authenticated the sender (ingest/authentication.py); an
    # index written before this was recorded holds "none".
    sender_auth: Literal["pass", "fail", "none"] = "none"
    recipients: list[str] = Field(default_factory=list)  # lower-cased addresses
    recipient_names: list[str] = Field(default_factory=list)  # "Name <addr>"
    date: datetime | None = None
    date_ts: float | None = None  # Unix seconds, for range filters
    quarantined: bool = False  # derived: no delivery outside quarantine
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

    @model_validator(mode="before")
    @classmethod
    def _single_mailbox(cls, data: Any) -> Any:
        # The schema-1 form (one ``mailbox`` and ``folder``; an index written by older
        # code, and a shorthand for tests and benchmarks) becomes one delivery.
        if isinstance(data, dict) and "mailbox" in data:
            return single_delivery(data)
        return data

    @model_validator(mode="after")
    def _derive(self) -> ChunkPayload:
        # Ingest writes every message with a delivery; one whose deliveries all ended on
        # their mail servers (ingest/withdraw.py) has none left and matches no filter.
        for name, value in delivery_fields(self.deliveries, self.quarantined_deliveries).items():
            setattr(self, name, value)
        return self

    def with_delivery(self, mailbox: str, folder: str, quarantined: bool) -> dict[str, Any] | None:
        """The delivery fields once this (mailbox, folder) copy is recorded too; None if
        it adds nothing. A clean copy lifts a quarantined one in the same place, never
        the other way round: a spam verdict on one copy must not hide another."""
        key = delivery_key(mailbox, folder)
        clean, held = list(self.deliveries), list(self.quarantined_deliveries)
        if key in clean or (quarantined and key in held):
            return None
        if quarantined:
            held.append(key)
        else:
            clean.append(key)
        return delivery_fields(clean, held)

    def without_delivery(self, mailbox: str, folder: str) -> dict[str, Any] | None:
        """The delivery fields once this (mailbox, folder) copy is gone (expunged or moved
        on the mail server); None if the message had no such delivery."""
        key = delivery_key(mailbox, folder)
        if key not in self.deliveries and key not in self.quarantined_deliveries:
            return None
        return delivery_fields([d for d in self.deliveries if d != key],
                               [d for d in self.quarantined_deliveries if d != key])

    def delivery_in(self, mailboxes: Iterable[str], folders: Iterable[str] | None = None) -> tuple[str, str]:
        """The first clean delivery inside ``mailboxes`` (and ``folders``): what a caller
        with that scope is shown as the message's mailbox and folder. ("", "") if none."""
        boxes, wanted = set(mailboxes), set(folders) if folders is not None else None
        for key in self.deliveries:
            mailbox, folder = parse_delivery(key)
            if mailbox in boxes and (wanted is None or folder in wanted):
                return mailbox, folder
        return "", ""


def delivery_fields(deliveries: Iterable[str], quarantined_deliveries: Iterable[str]) -> dict[str, Any]:
    """The delivery lists without repeats, and the fields derived from them."""
    clean = list(dict.fromkeys(deliveries))
    held = [d for d in dict.fromkeys(quarantined_deliveries) if d not in set(clean)]
    return {
        "deliveries": clean,
        "quarantined_deliveries": held,
        "mailboxes": list(dict.fromkeys(parse_delivery(d)[0] for d in clean)),
        "quarantined": not clean,
    }


def single_delivery(data: Mapping[str, Any]) -> dict[str, Any]:
    """A schema-1 payload (``mailbox``, ``folder``, ``quarantined``) in today's form."""
    out = dict(data)
    key = delivery_key(out.pop("mailbox"), out.pop("folder", None) or "INBOX")
    quarantined = bool(out.pop("quarantined", False))
    out.pop("mailboxes", None)
    out["deliveries"] = [] if quarantined else [key]
    out["quarantined_deliveries"] = [key] if quarantined else []
    return out


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
    required; quarantined points are always excluded by the adapter itself. A message
    matches ``mailboxes`` when it was delivered (outside quarantine) to any of them, and
    ``folders`` when one of those deliveries is in one of the folders."""

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
    # Given when the index is first opened, kept for its life (``layout.INDEX_ID_FIELD``).
    index_id: str

    def upsert(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace points (idempotent by point id), in order: a write cut
        short stores a prefix of ``chunks`` (ingest writes a message's mark last)."""

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

    def message_copies(self, tenant_id: str, rfc_message_id: str) -> list[ChunkPayload]:
        """The opening chunk (``chunk_no`` 0) of each part of every message of the
        tenant with this Message-ID, in any mailbox, quarantined or not. For ingest's
        identity and delivery bookkeeping only; never handed to a caller."""

    def set_message_fields(self, tenant_id: str, message_id: str, fields: Mapping[str, Any]) -> None:
        """Set payload fields on every point of one message (a new delivery)."""

    def close(self) -> None:
        ...
