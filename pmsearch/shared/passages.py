"""A run's evidence as numbered passages: what a model reads of the mail.

Both model-calling stages show the evidence the same way, so a reply's passage numbers
mean the same thing wherever they are read back. A passage is the best piece of one
message (or of one of its attachments) for the question, with the message's date,
sender, subject and its place in its thread; quoted replies and signatures are left
out, since the message they quote is evidence of its own and the quoted copy only
misleads attribution ("the insurer has not yet confirmed…" quoted in a later reply).

The whole block is kept within a character budget: the embedded model reads 20-90
prompt tokens a second on two cores (depending on the machine), so what it reads is the
run's main cost.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache

from pmsearch.shared.fencing import Fence
from pmsearch.shared.mail_parts import forwarded
from pmsearch.shared.messages import EvidenceMessage
from pmsearch.shared.steering import steers, without_steering
from pmsearch.shared.text.mail import own_text, sender_name
from pmsearch.shared.text.question import CODE
from pmsearch.shared.text.words import prefix_stems
from pmsearch.shared.textcache import cached_text

# Fewer, longer passages: fewer distractors for a small model and less to read, while
# every key fact still shows (an invoice's total sits past a shorter cut); measured with
# evals/passage_view.py (docs/design.md, "What the model reads").
PASSAGE_CHARS = 500
BUDGET_CHARS = 2800  # ~800 tokens of mail, headers included
MAX_PASSAGES = 3
PER_MESSAGE = 1  # the best piece of each message: more messages beat more of one
SUBJECT_CHARS = 70
COVER_NOTE_CHARS = 300  # a body this short in front of an attachment only announces it

_WORD = re.compile(r"\w+", re.UNICODE)



def _ranking_stems(text: str) -> set[str]:
    """:func:`pmsearch.shared.text.words.prefix_stems` for ranking, with each code (INV-2024-0173) one word: cut at its
    hyphens, every invoice of 2024 shares "inv" and "2024" with the question, and an
    invoice of the same year outranked the reply saying the asked one was paid."""
    codes = {m.group().casefold() for m in CODE.finditer(text)}
    return prefix_stems(CODE.sub(" ", text)) | codes if codes else prefix_stems(text)


@lru_cache(maxsize=8192)
def _piece_stems(piece: str) -> frozenset[str]:
    """:func:`_ranking_stems` of a piece (at most PASSAGE_CHARS), kept: pieces repeat
    across calls."""
    return frozenset(_ranking_stems(piece))


@dataclass(frozen=True)
class Passage:
    ref: str  # "P1", "P2", ... in the order shown
    message_id: str
    thread_id: str
    thread_ref: str  # "T1", "T2", ...: how the model names the thread
    part: str  # "body", "attachment:<name>" or "forwarded:<who>"
    text: str
    header: str  # date, sender, subject, place in thread


def _pieces(text: str, size: int) -> list[str]:
    """Windows of whole paragraphs up to ``size`` characters each."""
    out: list[str] = []
    current = ""
    for para in (p.strip() for p in text.split("\n")):
        if not para:
            continue
        while len(para) > size:
            cut = para.rfind(" ", 0, size)
            cut = cut if cut > size // 2 else size
            if current:
                out.append(current)
                current = ""
            out.append(para[:cut])
            para = para[cut:].strip()
        if current and len(current) + 1 + len(para) > size:
            out.append(current)
            current = para
        else:
            current = f"{current}\n{para}" if current else para
    if current:
        out.append(current)
    return out


def _when(m: EvidenceMessage) -> float:
    if m.date is None:
        return float("-inf")
    d = m.date if m.date.tzinfo else m.date.replace(tzinfo=UTC)
    return d.timestamp()


def _date(d: datetime | None) -> str:
    return d.strftime("%Y-%m-%d %a") if d else "undated"


def _best(question: set[str], pieces: list[tuple[str, str]], n: int) -> list[tuple[str, str]]:
    """The ``n`` pieces sharing most words with the question, in document order; the
    opening piece wins ties (it usually says what the message is about)."""
    scored = sorted(range(len(pieces)), key=lambda i: (-len(question & _piece_stems(pieces[i][1])), i))
    return [pieces[i] for i in sorted(scored[:n])]


def _priority(evidence: list[EvidenceMessage], threads: dict[str, list[EvidenceMessage]]) -> list[EvidenceMessage]:
    """Messages in the order they claim the budget: search order, each thread's latest
    message right after the thread's first appearance (it says how a matter ended, and
    a long thread would otherwise push it out)."""
    out: dict[str, EvidenceMessage] = {}
    seen: set[str] = set()
    for m in evidence:
        out.setdefault(m.message_id, m)
        if m.thread_id not in seen:
            seen.add(m.thread_id)
            latest = threads[m.thread_id][-1]
            out.setdefault(latest.message_id, latest)
    return list(out.values())


def _cover_note(pieces: list[tuple[str, str]]) -> bool:
    """A short body in front of attachments ("attached is the KPI report for March.
    Short version: ..."): the facts are in the attachment, so its best piece is shown
    beside the body, which would otherwise win the tie on the question's words."""
    body = sum(len(text) for part, text in pieces if part == "body")
    return 0 < body <= COVER_NOTE_CHARS and any(part != "body" for part, _ in pieces)


def _message_pieces(m: EvidenceMessage) -> list[tuple[str, str]]:
    pieces = [("body", p) for p in _text_pieces(m.body, True, PASSAGE_CHARS)]
    # A forwarded message is its author's words, shown as such: the forwarder's own
    # words are the body, and the index rarely holds the original.
    for author, text in forwarded(without_steering(m.body)):
        label = f"forwarded:forwarded from {author}" if author else "forwarded:a forwarded message"
        pieces += [(label, p) for p in _text_pieces(text, False, PASSAGE_CHARS)]
    for a in m.attachments:
        pieces += [(f"attachment:{a.name}", p) for p in _text_pieces(a.text, False, PASSAGE_CHARS)]
    return pieces


# Cutting a message (steering patterns, quote and signature cuts) was a tenth of the
# planner's CPU under load: see shared.textcache.
@cached_text(maxsize=2048, limit=32_000)
def _text_pieces(text: str, body: bool, size: int) -> tuple[str, ...]:
    return tuple(_pieces(own_text(text) if body else without_steering(text), size))


def _by_relevance(
    wanted: set[str],
    evidence: list[EvidenceMessage],
    pieces_of: dict[str, list[tuple[str, str]]],
    first: Collection[str],
) -> list[EvidenceMessage]:
    """``first`` (what a search round found), then the rest, each by the question's
    words in a message's best piece and subject; search order on ties.

    Hybrid search ranks whole messages; the passages show one piece of each, and in
    search order the supporting message often fell outside them, where the question's
    words in the piece itself keep it in (evals/passage_view.py). A search round's finds
    go first whatever their words: the model asked for them.
    """

    def key(m: EvidenceMessage) -> tuple[bool, int]:
        best = max((len(wanted & _piece_stems(text)) for _, text in pieces_of[m.message_id]), default=0)
        return m.message_id not in first, -(best + len(wanted & _ranking_stems(m.subject)))

    return sorted(evidence, key=key)


def build(
    question: str, evidence: list[EvidenceMessage], *, first: Collection[str] = (), budget: int = BUDGET_CHARS
) -> list[Passage]:
    """Numbered passages for ``evidence`` within ``budget``: threads in the order of
    their most relevant message (see :func:`_by_relevance`), each thread's messages
    oldest first, so the model reads how a matter developed and where it ended."""
    wanted = _ranking_stems(question)
    pieces_of = {m.message_id: _message_pieces(m) for m in evidence}
    ranked = _by_relevance(wanted, evidence, pieces_of, frozenset(first))
    threads: dict[str, list[EvidenceMessage]] = {}
    for m in ranked:
        threads.setdefault(m.thread_id, []).append(m)
    for messages in threads.values():
        messages.sort(key=_when)
    chosen: dict[str, tuple[str, str]] = {}  # message id -> (part, text)
    used = 0
    for m in _priority(ranked, threads):
        pieces = pieces_of[m.message_id]
        if not pieces and steers(m.body):
            continue  # all it says is addressed to a model: nothing to show
        # The last message of a thread says how the matter ended: it may show two
        # pieces (a decision letter's body and its attachment, say).
        n = PER_MESSAGE + (m is threads[m.thread_id][-1] and len(threads[m.thread_id]) > 1 or _cover_note(pieces))
        best = _best(wanted, pieces, n) or [("body", m.subject)]
        part, text = best[0][0], "\n".join(t if p == "body" else f"[{p.split(':', 1)[1]}] {t}" for p, t in best)
        cost = len(text) + 100  # the header line is about 100 characters
        if chosen and (used + cost > budget or len(chosen) >= MAX_PASSAGES):
            break
        chosen[m.message_id] = (part, text)
        used += cost
    passages: list[Passage] = []
    for t, messages in enumerate(threads.values(), 1):
        for place, m in enumerate(messages, 1):
            if m.message_id not in chosen:
                continue
            part, text = chosen[m.message_id]
            latest = ", latest found" if place == len(messages) and len(messages) > 1 else ""
            subject = m.subject if len(m.subject) <= SUBJECT_CHARS else m.subject[: SUBJECT_CHARS - 1] + "…"
            header = f"{_date(m.date)} | {sender_name(m.sender)} | {subject} | thread T{t}: {place} of {len(messages)}{latest}"
            passages.append(Passage("", m.message_id, m.thread_id, f"T{t}", part, text, header))
    return _renumber(passages)


def _renumber(passages: list[Passage]) -> list[Passage]:
    return [
        Passage(f"P{i}", p.message_id, p.thread_id, p.thread_ref, p.part, p.text, p.header)
        for i, p in enumerate(passages, 1)
    ]


_FAKE_LABEL = re.compile(r"^(?=P\d+ \|)", re.M)


def render(passages: list[Passage], fence: Fence) -> str:
    """The passages as the model reads them: one fenced block (one pair of marker lines
    costs far fewer tokens than one per passage), each passage opened by its label line.
    A line in the mail that looks like a label is pushed aside so it cannot pose as one."""
    if not passages:
        return "(no evidence found)"
    body = "\n\n".join(f"{p.ref} | {p.header}\n{_FAKE_LABEL.sub('> ', p.text)}" for p in passages)
    return fence.wrap("evidence", body)


def thread_ids(passages: list[Passage]) -> dict[str, str]:
    """Thread refs ("T1", ...) as shown, to the thread ids they stand for."""
    return {p.thread_ref: p.thread_id for p in passages}


def labels(passages: list[Passage]) -> dict[str, str]:
    """Passage refs ("P1", ...) as shown, to the messages they stand for."""
    return {p.ref: p.message_id for p in passages}


def message_ids(by_ref: dict[str, str], refs: list[str]) -> list[str]:
    """The messages behind ``refs`` (by :func:`labels`), first mention first, unknown refs dropped."""
    out: list[str] = []
    for ref in refs:
        mid = by_ref.get(ref)
        if mid and mid not in out:
            out.append(mid)
    return out
