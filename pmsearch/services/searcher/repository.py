"""The scoped repository: the only code that calls the index.

Every method takes a verified :class:`pmsearch.shared.scope.Scope`; every index filter is built
by :func:`scope_filter`, which intersects the caller's narrowing with that scope and
refuses anything that would widen it. Quarantined mail is excluded by the index adapter
in every query.
"""

from __future__ import annotations

import html
import re
from collections import defaultdict
from datetime import UTC, date, datetime, time
from typing import Iterable, Sequence

from pmsearch.services.searcher.embedding import Embedder, embed_queries
from pmsearch.services.searcher.errors import NotFound, WidenRefused
from pmsearch.services.searcher.index.base import ChunkPayload, IndexFilter, IndexMode, MailIndex, ScoredChunk
from pmsearch.shared.filters import Narrowing
from pmsearch.shared.messages import Contact, EvidenceAttachment, EvidenceMessage, Hit
from pmsearch.shared.scope import Scope
from pmsearch.shared.text.words import STOP_WORDS

SNIPPET_CHARS = 240
# Characters of one message (body, then attachments) a run's evidence, an observation or
# a tool's reply holds (PM_EVIDENCE_MAX_CHARS): what a run reads of a 2 MB message, and
# what verifying a sentence against it costs, stay bounded (docs/design.md, "Memory").
EVIDENCE_MAX_CHARS = 32_000
# Words not worth highlighting in a snippet are the stop words (they carry no match signal
# either: the keyword index drops them too).
_WORD = re.compile(r"[\w][\w.@-]*[\w]|\w", re.UNICODE)
# C0/C1 controls and bidi overrides: invisible in a one-line snippet, or worse (terminal
# escapes, text that reads in another order than it is stored).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


# An identifier (an invoice, claim or order number) is the keyword side's job: the
# dense side ranks its near neighbours (INV-2024-0158 for INV-2024-0173) as high as the
# exact match, and rank fusion then buries it. Hybrid puts exact identifier matches first.
_IDENTIFIER = re.compile(
    r"\b\w+(?:-\w+)*-\d+\b"  # INV-2024-0173, CLM-2024-55817
    r"|\b(?=\w*\d)(?=\w*[A-Za-z])\w{3,}\b"  # HC2024, 4AB12
    r"|\b\d{5,}\b"  # order 44817 (a year alone is not an identifier)
)


def identifiers(query: str) -> list[str]:
    return [m.group() for m in _IDENTIFIER.finditer(query)]


def _day_start(d: date) -> float:
    return datetime.combine(d, time.min, tzinfo=UTC).timestamp()


def _day_end(d: date) -> float:
    return datetime.combine(d, time.max, tzinfo=UTC).timestamp()


def scope_filter(scope: Scope, narrowing: Narrowing | None = None, **extra: object) -> IndexFilter:
    """The index filter for ``scope`` narrowed by ``narrowing``; raises WidenRefused when
    the narrowing names a mailbox outside the scope."""
    mailboxes: tuple[str, ...] = tuple(scope.mailboxes)
    fields: dict[str, object] = {}
    if narrowing is not None:
        if narrowing.mailboxes:
            outside = sorted(set(narrowing.mailboxes) - set(scope.mailboxes))
            if outside:
                raise WidenRefused(
                    f"mailbox {', '.join(outside)!s} is outside the caller's scope",
                    offending=outside,
                )
            mailboxes = tuple(m for m in scope.mailboxes if m in set(narrowing.mailboxes))
        if narrowing.folders:
            fields["folders"] = tuple(narrowing.folders)
        if narrowing.senders:
            fields["senders"] = tuple(s.lower() for s in narrowing.senders)
        if narrowing.date_from:
            fields["date_from"] = _day_start(narrowing.date_from)
        if narrowing.date_to:
            fields["date_to"] = _day_end(narrowing.date_to)
        if narrowing.has_attachment is not None:
            fields["has_attachment"] = narrowing.has_attachment
    fields.update({k: v for k, v in extra.items() if v is not None})
    return IndexFilter(tenant_id=scope.tenant_id, mailboxes=mailboxes, **fields)


def mark_snippet(text: str, query: str, width: int = SNIPPET_CHARS) -> str:
    """A window of ``text`` around the first query term, as an HTML fragment: the mail
    text escaped, then query terms wrapped in <mark> (the only tag it can hold)."""
    terms = {t.casefold() for t in _WORD.findall(query) if len(t) > 1} - STOP_WORDS
    flat = " ".join(_CONTROL.sub(" ", text).split())
    first = None
    for m in _WORD.finditer(flat):
        if m.group().casefold() in terms:
            first = m.start()
            break
    start = max(0, (first or 0) - width // 3)
    window = flat[start : start + width]
    if start > 0:
        window = "…" + window
    if start + width < len(flat):
        window += "…"
    # Escape each piece, never the marked-up whole: mail text is untrusted HTML-wise
    # (an HTML mail's "&lt;img onerror=...&gt;" is the text "<img onerror=...>" here).
    out, pos = [], 0
    for m in _WORD.finditer(window) if terms else ():
        if m.group().casefold() in terms:
            out.append(html.escape(window[pos : m.start()]))
            out.append(f"<mark>{html.escape(m.group())}</mark>")
            pos = m.end()
    out.append(html.escape(window[pos:]))
    return "".join(out)


def _hit(chunk: ScoredChunk, query: str, flt: IndexFilter) -> Hit:
    p = chunk.payload
    # Of the message's deliveries, only one inside the caller's filter is named: which
    # other mailboxes also received it is not the caller's to know.
    mailbox, folder = p.delivery_in(flt.mailboxes, flt.folders)
    return Hit(
        message_id=p.message_id,
        thread_id=p.thread_id,
        mailbox=mailbox,
        sender=p.sender,
        date=p.date,
        subject=p.subject,
        snippet=mark_snippet(p.text, query),
        score=chunk.score,
        folder=folder,
        has_attachments=p.has_attachments,
    )


def group_hits(chunks: Iterable[ScoredChunk], query: str, limit: int, flt: IndexFilter) -> list[Hit]:
    """One hit per message, from its best chunk, best first."""
    best: dict[str, ScoredChunk] = {}
    for c in chunks:
        cur = best.get(c.payload.message_id)
        if cur is None or c.score > cur.score:
            best[c.payload.message_id] = c
    ranked = sorted(best.values(), key=lambda c: c.score, reverse=True)[:limit]
    return [_hit(c, query, flt) for c in ranked]


def assemble(payloads: Sequence[ChunkPayload], flt: IndexFilter) -> list[EvidenceMessage]:
    """Whole messages from their chunks: body and attachments from the stored source;
    the mailbox named is one of ``flt``'s that the message was delivered to."""
    by_msg: dict[str, list[ChunkPayload]] = defaultdict(list)
    for p in payloads:
        by_msg[p.message_id].append(p)
    out = []
    for chunks in by_msg.values():
        chunks.sort(key=lambda p: (p.kind != "body", p.attachment_name or "", p.chunk_no))
        head = chunks[0]
        parts: dict[tuple[str, str], list[ChunkPayload]] = defaultdict(list)
        for p in chunks:
            parts[(p.kind, p.attachment_name or "")].append(p)

        def text_of(group: list[ChunkPayload]) -> str:
            first = group[0]
            if first.source_text is not None and first.chunk_no == 0:
                return first.source_text
            return "\n".join(p.text for p in group)

        body = text_of(parts[("body", "")]) if ("body", "") in parts else ""
        attachments = [
            EvidenceAttachment(name=name, text=text_of(group))
            for (kind, name), group in parts.items()
            if kind == "attachment"
        ]
        out.append(
            EvidenceMessage(
                message_id=head.message_id,
                tenant_id=head.tenant_id,
                thread_id=head.thread_id,
                mailbox=head.delivery_in(flt.mailboxes, flt.folders)[0],
                sender=head.sender,
                sender_auth=head.sender_auth,
                recipients=head.recipient_names or head.recipients,
                date=head.date,
                subject=head.subject,
                body=body,
                attachments=attachments,
                snippet=" ".join(body.split())[:SNIPPET_CHARS],
            )
        )
    out.sort(key=lambda m: (m.date is None, m.date or datetime.min.replace(tzinfo=UTC)))
    return out


def bounded(message: EvidenceMessage, max_chars: int) -> EvidenceMessage:
    """``message`` with at most ``max_chars`` characters of text, body first, then its
    attachments in order (an attachment past the budget keeps its name, no text); the
    beginning of each part, so offsets into it stay offsets into the stored message."""
    size = len(message.body) + sum(len(a.text) for a in message.attachments)
    if size <= max_chars:
        return message
    body = message.body[:max_chars]
    left = max_chars - len(body)
    attachments = []
    for a in message.attachments:
        attachments.append(a.model_copy(update={"text": a.text[:left]}))
        left -= len(attachments[-1].text)
    return message.model_copy(update={"body": body, "attachments": attachments, "truncated": True})


class ScopedMailRepository:
    """Scoped reads of the mail index. Construct once per process; pass the scope on
    every call. Every message read is :func:`bounded` to ``evidence_max_chars``: it may
    be copied into a run's evidence, an observation and a tool's reply, all in Redis."""

    def __init__(self, index: MailIndex, embedder: Embedder, *, evidence_max_chars: int = EVIDENCE_MAX_CHARS) -> None:
        self._index = index
        self._embedder = embedder
        self._max_chars = evidence_max_chars

    def search(
        self, scope: Scope, query: str, mode: IndexMode, narrowing: Narrowing | None = None, limit: int = 10
    ) -> list[Hit]:
        flt = scope_filter(scope, narrowing)
        dense = None if mode == "keyword" else embed_queries(self._embedder, [query])[0]
        chunks = self._index.query(flt, mode=mode, text=query, dense=dense, limit=limit * 4)
        hits = group_hits(chunks, query, limit, flt)
        ids = identifiers(query) if mode == "hybrid" else []
        if ids:
            exact = [
                h
                for h in group_hits(
                    self._index.query(flt, mode="keyword", text=" ".join(ids), dense=None, limit=limit * 4), query, limit, flt
                )
                if any(i.casefold() in h.snippet.casefold() for i in ids)
            ]
            first = {h.message_id for h in exact}
            rest = [h for h in hits if h.message_id not in first]
            # Keep scores on the fused scale, exact matches just above the rest.
            top = rest[0].score if rest else 0.0
            exact = [h.model_copy(update={"score": top + 1e-3 * (len(exact) - i)}) for i, h in enumerate(exact)]
            hits = (exact + rest)[:limit]
        return hits

    def messages(self, scope: Scope, message_ids: Sequence[str]) -> list[EvidenceMessage]:
        if not message_ids:
            return []
        flt = scope_filter(scope, message_ids=tuple(message_ids))
        return [bounded(m, self._max_chars) for m in assemble(self._index.scroll(flt, limit=2000), flt)]

    def message(self, scope: Scope, message_id: str) -> EvidenceMessage:
        found = self.messages(scope, [message_id])
        if not found:
            raise NotFound(f"message {message_id} is not in scope")
        return found[0]

    def thread(
        self, scope: Scope, thread_id: str, limit: int = 20, *, latest: bool = False
    ) -> list[EvidenceMessage]:
        """A thread's messages oldest first: its first ``limit``, or with ``latest`` its
        last ``limit``."""
        flt = scope_filter(scope, thread_ids=(thread_id,))
        found = [bounded(m, self._max_chars) for m in assemble(self._index.scroll(flt, limit=2000), flt)]
        if not found:
            raise NotFound(f"thread {thread_id} is not in scope")
        return found[-limit:] if latest else found[:limit]

    def related(
        self, scope: Scope, message_id: str, narrowing: Narrowing | None = None, limit: int = 5
    ) -> list[Hit]:
        source = scope_filter(scope, message_ids=(message_id,), kind="body")
        vectors = self._index.vectors(source, limit=1)
        if not vectors:
            raise NotFound(f"message {message_id} is not in scope")
        seed = self.message(scope, message_id)
        flt = scope_filter(scope, narrowing)
        chunks = self._index.recommend(flt, vectors[0], limit=limit * 4 + 4)
        others = [c for c in chunks if c.payload.message_id != message_id]
        return group_hits(others, seed.subject, limit, flt)

    def contacts(
        self, scope: Scope, narrowing: Narrowing | None = None, query: str | None = None, limit: int = 20
    ) -> list[Contact]:
        flt = scope_filter(scope, narrowing, kind="body")
        counts: dict[str, int] = defaultdict(int)
        names: dict[str, str] = {}
        for p in self._index.scroll(flt, limit=20_000):
            if p.chunk_no != 0:
                continue
            people = [(p.sender_email, p.sender)] + list(zip(p.recipients, p.recipient_names or p.recipients))
            for address, display in people:
                if not address:
                    continue
                counts[address] += 1
                name = display.split("<")[0].strip().strip('"') if "<" in display else ""
                if name and address not in names:
                    names[address] = name
        needle = (query or "").casefold()
        found = [
            Contact(address=a, name=names.get(a, ""), messages=n)
            for a, n in counts.items()
            if not needle or needle in a.casefold() or needle in names.get(a, "").casefold()
        ]
        found.sort(key=lambda c: (-c.messages, c.address))
        return found[:limit]
