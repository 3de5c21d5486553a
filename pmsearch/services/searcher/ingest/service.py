"""Ingest: parsed mail → threaded, chunked, embedded points in the index.

A message is its Message-ID *and* its content (:mod:`.identity`): the point ids derive
from pmsearch's message id, which derives from the tenant, the Message-ID and a digest of
the content. A copy of a message already indexed (the same mail in alice's and bob's
mailbox, or filed twice) adds its (mailbox, folder) to that message's deliveries instead
of being indexed again; a copy with other content under a known Message-ID is a message
of its own, and the collision is reported. A quarantined copy is recorded as such and
never hides a clean one. Embeddings are batched across messages because the embedder,
not parsing, is what limits throughput. A message counts as stored once its opening body
point is: that point is written after all its others, so an import cut short (a killed
searcher) is redone by the next import of the message, not taken for a duplicate.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from pmsearch.services.searcher.embedding import Embedder
from pmsearch.services.searcher.errors import IngestError
from pmsearch.services.searcher.index.base import Chunk, ChunkPayload, IndexFilter, MailIndex, delivery_key
from pmsearch.services.searcher.ingest.authentication import sender_auth
from pmsearch.services.searcher.ingest.chunking import split_text
from pmsearch.services.searcher.ingest.identity import content_digest, same_content
from pmsearch.services.searcher.ingest.limits import IngestLimits
from pmsearch.services.searcher.ingest.sandbox import sandbox_for
from pmsearch.services.searcher.ingest.schemas import ParsedMessage, message_key, thread_key
from pmsearch.shared.mail_parts import searchable_text
from pmsearch.shared.messages import IngestItem

log = logging.getLogger(__name__)

RawItem = tuple[bytes, str, str]  # (raw bytes, folder, label for error reports)

# An attachment beyond this many characters is indexed by its beginning only: a 400-page
# PDF would otherwise cost more embedding time than thousands of ordinary messages.
MAX_ATTACHMENT_CHARS = 100_000
# Parsed text held before a flush: with messages of up to PM_INGEST_MAX_TEXT_CHARS each,
# a count-only batch could hold hundreds of MB.
FLUSH_CHARS = 8_000_000


class IngestReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    indexed: int = 0
    duplicate: int = 0
    error: int = 0
    chunks: int = 0
    deliveries: int = 0  # duplicates that added a mailbox or folder to their message
    collisions: int = 0  # indexed under a Message-ID the tenant had with other content
    errors: list[str] = Field(default_factory=list)  # one line each: "label: reason"
    # One outcome per input message, ``index`` being its position in the input.
    items: list[IngestItem] = Field(default_factory=list)


@dataclass
class _RunState:
    """What one ingest call has assigned but may not have written to the index yet."""

    threads: dict[str, str] = field(default_factory=dict)  # rfc id → thread id
    subjects: dict[str, str] = field(default_factory=dict)  # normalized subject → thread id
    domains: dict[str, set[str]] = field(default_factory=dict)  # thread id → its participants' domains


def _domains(addresses: Iterable[str]) -> set[str]:
    return {a.rpartition("@")[2].casefold() for a in addresses if a and "@" in a}


@dataclass
class _Parsed:
    position: int
    msg: ParsedMessage
    digest: str


@dataclass
class _New:
    """A message first seen in the batch being flushed, with every delivery of it so far."""

    item: _Parsed
    thread_id: str
    deliveries: list[str] = field(default_factory=list)
    quarantined_deliveries: list[str] = field(default_factory=list)


class Ingester:
    """Imports raw messages for one tenant's mailbox into a :class:`MailIndex`.

    ``tenant_mailboxes`` tells the ingester which mailboxes a tenant has, so threads are
    found across all of them (an :class:`IndexFilter` always names mailboxes); mailboxes
    this ingester has written to are added on its own. Copies of a message are found
    tenant-wide whatever the mailbox.
    """

    def __init__(
        self,
        index: MailIndex,
        embedder: Embedder,
        chunk_chars: int = 1000,
        *,
        embed_batch: int = 64,
        message_batch: int = 64,
        tenant_mailboxes: Callable[[str], Iterable[str]] | None = None,
        limits: IngestLimits | None = None,
        trusted_authserv: Iterable[str] = (),
    ) -> None:
        self.index = index
        self.trusted_authserv = tuple(trusted_authserv)
        self.embedder = embedder
        self.chunk_chars = chunk_chars
        self.embed_batch = embed_batch
        self.message_batch = message_batch
        self._tenant_mailboxes = tenant_mailboxes
        self._known: dict[str, set[str]] = {}
        self.limits = limits or IngestLimits()
        # Parsing (MIME, PDF, HTML) runs over hostile bytes, so in a bounded subprocess.
        self._sandbox = sandbox_for(self.limits)

    # -- public ----------------------------------------------------------------------

    def ingest(self, tenant_id: str, mailbox: str, raws: Iterable[RawItem]) -> IngestReport:
        """Parse, thread, chunk, embed and upsert; malformed messages are reported and
        skipped, everything else is imported."""
        report = IngestReport()
        state = _RunState()
        self._known.setdefault(tenant_id, set()).add(mailbox)
        pending: list[_Parsed] = []
        for position, (raw, folder, label, *_) in enumerate(raws):
            try:
                pending.append(_Parsed(position, self._sandbox.parse(raw, folder=folder), content_digest(raw)))
            except IngestError as exc:
                self._fail(report, position, label, exc.detail)
            except Exception as exc:  # a parser bug must cost one message, not the import
                self._fail(report, position, label, f"unexpected {type(exc).__name__}: {exc}")
            if len(pending) >= self.message_batch or _text_size(pending) >= FLUSH_CHARS:
                self._flush(tenant_id, mailbox, pending, state, report)
                pending = []
        if pending:
            self._flush(tenant_id, mailbox, pending, state, report)
        report.items.sort(key=lambda item: item.index)
        return report

    # -- steps -----------------------------------------------------------------------

    @staticmethod
    def _fail(report: IngestReport, position: int, label: str, reason: str) -> None:
        reason = " ".join(reason.split())
        report.error += 1
        report.errors.append(f"{label}: {reason}")
        report.items.append(IngestItem(index=position, status="error", error=reason))

    def _mailboxes(self, tenant_id: str, mailbox: str) -> tuple[str, ...]:
        names = set(self._known.get(tenant_id, set())) | {mailbox}
        if self._tenant_mailboxes is not None:
            names |= set(self._tenant_mailboxes(tenant_id))
        return tuple(sorted(names))

    def _flush(self, tenant_id: str, mailbox: str, batch: list[_Parsed], state: _RunState,
               report: IngestReport) -> None:
        scope = self._mailboxes(tenant_id, mailbox)
        # Oldest first, so a parent in the same batch is threaded before its replies.
        batch = sorted(batch, key=lambda p: p.msg.date.timestamp() if p.msg.date else float("inf"))
        fresh: dict[str, _New] = {}
        for item in batch:
            msg = item.msg
            mid = message_key(tenant_id, msg.rfc_message_id, item.digest)
            if mid in fresh:  # another copy of a message this batch indexes
                added = _record(fresh[mid], delivery_key(mailbox, msg.folder), msg.quarantined)
                self._duplicate(report, item, mid, added)
                continue
            copies = self.index.message_copies(tenant_id, msg.rfc_message_id)
            if self._deliver(tenant_id, mailbox, item, copies, report):
                continue
            # This very message written in part (its import was cut short) is no collision.
            others = sorted(({p.message_id for p in copies} - {mid})
                            | {m for m, n in fresh.items() if n.item.msg.rfc_message_id == msg.rfc_message_id})
            thread_id = self._thread(tenant_id, scope, msg, state)
            if not msg.quarantined:  # the index cannot see quarantined mail; neither may we
                state.threads[msg.rfc_message_id] = thread_id
                state.domains.setdefault(thread_id, set()).update(_domains(
                    [msg.sender.email, *(a.email for a in (*msg.to, *msg.cc))]))
                if msg.normalized_subject:
                    state.subjects.setdefault(msg.normalized_subject, thread_id)
            fresh[mid] = new = _New(item, thread_id)
            _record(new, delivery_key(mailbox, msg.folder), msg.quarantined)
            report.indexed += 1
            report.items.append(IngestItem(index=item.position, status="indexed", message_id=mid,
                                           collision=bool(others), notes=msg.notes))
            if others:
                report.collisions += 1
                log.warning("message id collision in tenant %s: %s/%s holds a copy with other content than %s; "
                            "indexed apart as %s", tenant_id, mailbox, msg.folder, ", ".join(others), mid)
        payloads: list[ChunkPayload] = []
        texts: list[str] = []
        for mid, new in fresh.items():
            for payload, text in self._capped(report, new.item.position, self._chunks(tenant_id, mid, new)):
                payloads.append(payload)
                texts.append(text)
        if not payloads:
            return
        vectors = self._embed(texts)
        chunks = [Chunk(payload=p, dense=v) for p, v in zip(payloads, vectors)]
        # A message's opening body point is what marks it as stored (the duplicate check
        # looks for it), so it is written after all its other points: the index writes
        # in order, and a write cut short (a killed searcher) leaves a message without
        # it, which re-import writes again rather than skipping as a duplicate.
        chunks.sort(key=lambda c: _is_head(c.payload))
        self.index.upsert(chunks)
        report.chunks += len(payloads)

    def _deliver(self, tenant_id: str, mailbox: str, item: _Parsed, copies: Sequence[ChunkPayload],
                 report: IngestReport) -> bool:
        """Record this copy on the stored message with the same content, if there is one."""
        by_message: dict[str, list[ChunkPayload]] = {}
        for p in copies:
            by_message.setdefault(p.message_id, []).append(p)
        msg = item.msg
        for message_id, stored in by_message.items():
            head = next((p for p in stored if _is_head(p)), None)
            if head is None:
                continue  # written in part, never marked stored: indexed again
            if head.content_digest != item.digest:
                # Indexed before content digests: the same message only if everything
                # it shows is equal; it keeps its id and learns its digest.
                names = _unique_names([a.filename for a in msg.attachments])
                if head.content_digest is not None or not same_content(msg, names, stored, MAX_ATTACHMENT_CHARS):
                    continue
                fields = {**(head.with_delivery(mailbox, msg.folder, msg.quarantined) or {}),
                          "content_digest": item.digest}
            else:
                fields = head.with_delivery(mailbox, msg.folder, msg.quarantined) or {}
            if fields:
                self.index.set_message_fields(tenant_id, message_id, fields)
            self._duplicate(report, item, message_id, "deliveries" in fields)
            return True
        return False

    @staticmethod
    def _duplicate(report: IngestReport, item: _Parsed, message_id: str, added: bool) -> None:
        report.duplicate += 1
        report.deliveries += added
        report.items.append(IngestItem(index=item.position, status="duplicate", message_id=message_id))

    def _thread(self, tenant_id: str, scope: tuple[str, ...], msg: ParsedMessage, state: _RunState) -> str:
        """Thread of a referenced message we already know, else the References root,
        else (for a Re:/Fwd: subject) a same-subject thread the sender's domain takes
        part in, else a thread of its own."""
        refs = [r for r in dict.fromkeys([msg.in_reply_to, *reversed(msg.references)]) if r and r != msg.rfc_message_id]
        if refs:
            for ref in refs:  # nearest ancestor first
                if ref in state.threads:
                    return state.threads[ref]
            hits = self.index.scroll(
                IndexFilter(tenant_id=tenant_id, mailboxes=scope, rfc_message_ids=tuple(refs)), limit=200
            )
            by_ref = {p.rfc_message_id: p.thread_id for p in hits}
            for ref in refs:
                if ref in by_ref:
                    return by_ref[ref]
            root = msg.references[0] if msg.references else msg.in_reply_to
            return thread_key(tenant_id, root or msg.rfc_message_id)
        if msg.has_reply_prefix and msg.normalized_subject:
            # A subject alone never joins across organisations: the sender's domain must
            # be one of the thread's participants' (a sender or a recipient), so a
            # stranger's "Re: <subject>" starts a thread of its own.
            own = _domains([msg.sender.email])
            candidate = state.subjects.get(msg.normalized_subject)
            if candidate is not None and own & state.domains.get(candidate, set()):
                return candidate
            hits = self.index.scroll(
                IndexFilter(tenant_id=tenant_id, mailboxes=scope, normalized_subject=msg.normalized_subject,
                            kind="body"),
                limit=50,
            )
            joined: dict[str, set[str]] = {}
            for p in hits:
                joined.setdefault(p.thread_id, set()).update(_domains([p.sender_email, *p.recipients]))
            hits = [p for p in hits if own & joined[p.thread_id]]
            if hits:  # the most recent conversation under that subject
                return max(hits, key=lambda p: p.date_ts or 0.0).thread_id
        return thread_key(tenant_id, msg.rfc_message_id)

    def _chunks(self, tenant_id: str, mid: str, new: _New) -> list[tuple[ChunkPayload, str]]:
        """(payload, text to embed) for the body and each attachment with text."""
        msg = new.item.msg
        names = _unique_names([a.filename for a in msg.attachments])
        people = [*msg.to, *msg.cc]
        base = dict(
            tenant_id=tenant_id, message_id=mid, rfc_message_id=msg.rfc_message_id,
            content_digest=new.item.digest, deliveries=new.deliveries,
            quarantined_deliveries=new.quarantined_deliveries,
            thread_id=new.thread_id, subject=msg.subject, normalized_subject=msg.normalized_subject,
            sender=msg.sender.display, sender_email=msg.sender.email,
            sender_auth=sender_auth(msg.authentication_results, msg.sender.email, self.trusted_authserv),
            recipients=list(dict.fromkeys(a.email for a in people if a.email)),
            recipient_names=list(dict.fromkeys(a.display for a in people if a.display)),
            date=msg.date, date_ts=msg.date.timestamp() if msg.date else None,
            has_attachments=bool(msg.attachments),
            attachment_names=names, in_reply_to=msg.in_reply_to, references=msg.references,
        )
        out: list[tuple[ChunkPayload, str]] = []
        # Every message gets at least one body point, so an empty mail still exists for
        # duplicate checks, threads and read_message.
        # Chunk 0 of each part also carries the part's whole text (``source_text``), so a
        # message is read back exactly as parsed rather than re-joined from overlapping chunks.
        for n, text in enumerate(split_text(msg.body_text, self.chunk_chars) or [""]):
            payload = ChunkPayload(**base, kind="body", chunk_no=n, text=text,
                                   source_text=msg.body_text if n == 0 else None)
            out.append((payload, embedding_text(payload)))
        for att, name in zip(msg.attachments, names):
            if not att.text:
                continue
            source = att.text[:MAX_ATTACHMENT_CHARS]
            for n, text in enumerate(split_text(source, self.chunk_chars)):
                payload = ChunkPayload(**base, kind="attachment", attachment_name=name, chunk_no=n, text=text,
                                       source_text=source if n == 0 else None)
                out.append((payload, embedding_text(payload)))
        return out

    def _capped(self, report: IngestReport, position: int,
                chunks: list[tuple[ChunkPayload, str]]) -> list[tuple[ChunkPayload, str]]:
        """The message's first ``max_chunks`` points (body first, then attachments in
        order): a huge message must not cost more embedding than many ordinary ones."""
        cap = self.limits.max_chunks
        if len(chunks) <= cap:
            return chunks
        note = f"indexed the first {cap} of {len(chunks)} chunks (PM_INGEST_MAX_CHUNKS)"
        for item in reversed(report.items):
            if item.index == position:
                item.notes.append(note)
                break
        return chunks[:cap]

    def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed in fixed-size calls, similar lengths together (a transformer batch pads
        to its longest text), each distinct text once (forwards repeat attachments)."""
        unique = sorted(set(texts), key=len)
        found: dict[str, list[float]] = {}
        for start in range(0, len(unique), self.embed_batch):
            batch = unique[start:start + self.embed_batch]
            vectors = self.embedder.embed(batch)
            if len(vectors) != len(batch):
                raise ValueError(f"embedder returned {len(vectors)} vectors for {len(batch)} texts")
            found.update(zip(batch, (list(v) for v in vectors)))
        return [found[t] for t in texts]


def embedding_text(payload: ChunkPayload) -> str:
    """What a point's dense vector embeds: its subject, an attachment's name, and its text;
    of a body chunk the sender's own words only (a reply's quote is its parent's text,
    which has its own vector, and the embedder's time is the ingest bottleneck)."""
    if payload.kind == "attachment":
        return f"{payload.subject}\n{payload.attachment_name}\n\n{payload.text}"
    return f"{payload.subject}\n\n{searchable_text(payload.text)}"


def _record(new: _New, key: str, quarantined: bool) -> bool:
    """Add a delivery to a message of this batch; False if it was known (a clean
    delivery lifts a quarantined one, as on stored messages)."""
    if key in new.deliveries or (quarantined and key in new.quarantined_deliveries):
        return False
    if quarantined:
        new.quarantined_deliveries.append(key)
    else:
        new.deliveries.append(key)
        if key in new.quarantined_deliveries:
            new.quarantined_deliveries.remove(key)
    return True


def _is_head(payload: ChunkPayload) -> bool:
    """A message's opening body point: written last, so present only once all are."""
    return payload.kind == "body" and payload.chunk_no == 0


def _text_size(pending: list[_Parsed]) -> int:
    return sum(len(p.msg.body_text) + sum(len(a.text or "") for a in p.msg.attachments) for p in pending)


def _unique_names(names: list[str]) -> list[str]:
    """Attachment names made unique per message: the point id includes the name."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        count = seen.get(name, 0) + 1
        seen[name] = count
        if count > 1:
            stem, dot, ext = name.rpartition(".")
            name = f"{stem} ({count}).{ext}" if dot and stem else f"{name} ({count})"
        out.append(name)
    return out
