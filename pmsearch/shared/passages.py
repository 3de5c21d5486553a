"""A run's evidence as numbered passages: what a model reads of the mail.

Both model-calling stages show the evidence the same way, so a reply's passage numbers
mean the same thing wherever they are read back. A passage is one message (or its
attachment) cut to the question: the run of neighbouring sentences that covers most of
the question's words, the rarest counting most (:mod:`pmsearch.shared.relevance`),
widened by what follows it (an answer often follows the sentence naming the matter),
under a header line with the message's date, sender, subject and its place in its
thread. Signatures are left out, and so is what a reply quotes of a message in the
evidence: that message speaks for itself, and the quoted copy only misleads attribution
("the insurer has not yet confirmed…" quoted in a later reply); a quote of mail the
mailbox never held is shown, as quoted. A short message is shown whole: a reply's
"Applied, thanks." names nothing the question asks, and is the answer.

The whole block is kept within a character budget: the embedded model reads 20-90
prompt tokens a second on two cores (depending on the machine), so what it reads is the
run's main cost. Sentences cut to the question leave room for more messages in the same
budget than fixed pieces did.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime

from pmsearch.shared import relevance
from pmsearch.shared.fencing import Fence
from pmsearch.shared.mail_parts import forwarded
from pmsearch.shared.messages import EvidenceMessage
from pmsearch.shared.steering import steers, without_steering
from pmsearch.shared.text.mail import own_replies, sender_name
from pmsearch.shared.text.sentences import prose_sentences, table_sentences
from pmsearch.shared.textcache import cached_text

BUDGET_CHARS = 1450  # ~400 tokens of mail, headers included
MAX_PASSAGES = 4
MESSAGE_CHARS = 520  # one message's sentences: more messages beat more of one
LATEST_CHARS = 700  # a thread's latest message says how the matter ended
SHORT_CHARS = 320  # a message this short is shown whole
# A thread's latest message may show two windows, the first taking this share of its
# room: how a matter ended is often said twice (a decision's opening and its letter).
LATEST_WINDOWS = (0.5, 1.0)
UNIT_CHARS = 300  # a sentence longer than this (a line without stops) is cut
QUOTE_REACH = 2  # an inline reply's first sentences answer the quote above them
SUBJECT_CHARS = 70
HEADER_CHARS = 100  # what a header line costs, about
GAP = " … "

@dataclass(frozen=True)
class Passage:
    ref: str  # "P1", "P2", ... in the order shown
    message_id: str
    thread_id: str
    thread_ref: str  # "T1", "T2", ...: how the model names the thread
    part: str  # "body", "attachment:<name>" or "forwarded:<who>"
    text: str
    header: str  # date, sender, subject, place in thread
    # The sentences ``text`` is made of, as (part, sentence) in the order shown.
    sentences: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class _Unit:
    """One sentence (or table row) of a message, with where it comes from; ``context``
    holds the words of the quote an inline reply's first sentences answer."""

    part: str
    text: str
    terms: frozenset[str]
    context: frozenset[str] = frozenset()
    quote: frozenset[str] = frozenset()  # a quoted sentence: the words of its whole quote


def _cut(sentence: str, size: int) -> list[str]:
    """A sentence longer than ``size`` (a line without stops) in pieces at spaces."""
    out = []
    while len(sentence) > size:
        cut = sentence.rfind(" ", 0, size)
        cut = cut if cut > size // 2 else size
        out.append(sentence[:cut])
        sentence = sentence[cut:].strip()
    return [*out, sentence] if sentence else out


# Cutting a message (steering patterns, quote and signature cuts) was a tenth of the
# planner's CPU under load: see shared.textcache.
@cached_text(maxsize=2048, limit=32_000)
def _sentences(text: str, name: str) -> tuple[str, ...]:
    raw = table_sentences(name, without_steering(text)) if name else prose_sentences(without_steering(text))
    return _pieces(raw)


def _pieces(sentences: list[str]) -> tuple[str, ...]:
    return tuple(piece for sentence in sentences for piece in _cut(sentence.strip(), UNIT_CHARS) if piece)


@cached_text(maxsize=2048, limit=32_000)
def _body_units(body: str) -> tuple[_Unit, ...]:
    """The body's sentences: the sender's own, and what it quotes, marked as quoted
    (its author named where the attribution names one). The first :data:`QUOTE_REACH`
    own sentences after a quote carry the quote's words as context."""
    units: list[_Unit] = []
    quoted = frozenset[str]()
    for kind, text, author in own_replies(body):
        sentences = _pieces(prose_sentences(text))
        if kind == "quoted":
            part = f"quoted:quoted from {author}" if author else "quoted:quoted"
            quoted = relevance.terms(text)
            units += [_Unit(part, t, relevance.terms(t), quote=quoted) for t in sentences]
            continue
        for i, t in enumerate(sentences):
            units.append(_Unit("body", t, relevance.terms(t), quoted if i < QUOTE_REACH else frozenset()))
        quoted = frozenset()
    return tuple(units)


def _units(m: EvidenceMessage) -> list[_Unit]:
    def made(part: str, texts: tuple[str, ...]) -> list[_Unit]:
        return [_Unit(part, t, relevance.terms(t)) for t in texts]

    units = list(_body_units(m.body))
    # A forwarded message is its author's words, shown as such: the forwarder's own
    # words are the body, and the index rarely holds the original.
    for author, text in forwarded(without_steering(m.body)):
        label = f"forwarded:forwarded from {author}" if author else "forwarded:a forwarded message"
        units += made(label, _sentences(text, ""))
    for a in m.attachments:
        units += made(f"attachment:{a.name}", _sentences(a.text, a.name))
    return units


def _when(m: EvidenceMessage) -> float:
    if m.date is None:
        return float("-inf")
    d = m.date if m.date.tzinfo else m.date.replace(tzinfo=UTC)
    return d.timestamp()


def _date(d: datetime | None) -> str:
    return d.strftime("%Y-%m-%d %a") if d else "undated"


def _without_held_quotes(units_of: dict[str, list[_Unit]], evidence: list[EvidenceMessage]) -> dict[str, list[_Unit]]:
    """Each message's units less what it quotes of another message of the evidence
    (:func:`pmsearch.shared.relevance.held` against the others' own words, exactly as the
    verifier weighs the quotes it accepts), and less each quoted sentence another
    message says word for word: the original speaks for itself, under its sender."""
    words = relevance.own_terms({m.message_id: m.body for m in evidence})
    said = {u.text.casefold() for units in units_of.values() for u in units if not u.quote}

    def shown(mid: str, u: _Unit) -> bool:
        if not u.quote:
            return True
        return u.text.casefold() not in said and not relevance.held(u.quote, (t for k, t in words.items() if k != mid))

    return {mid: [u for u in units if shown(mid, u)] for mid, units in units_of.items()}


def _window(units: list[_Unit], weights: relevance.Weights, cap: int) -> tuple[float, int, int]:
    """(score, first, last) of the run of neighbouring sentences within ``cap``
    characters that covers most of the question's words, each word counted once by its
    weight: the answer sits near the words that name the matter, rarely in the same
    sentence. The shortest such run, the earliest on ties."""
    best: tuple[float, int, int] = (0.0, 0, 0)
    for i in range(len(units)):
        covered: frozenset[str] = frozenset()
        used = 0
        for j in range(i, len(units)):
            used += len(units[j].text) + 1
            if j > i and used > cap:
                break
            covered |= units[j].terms | units[j].context
            score = weights.score(covered)
            if score > best[0]:
                best = (score, i, j)
    return best


def _choose(units: list[_Unit], weights: relevance.Weights, cap: int, windows: tuple[float, ...] = (1.0,)) -> list[int]:
    """The units shown of one message, in document order, within ``cap`` characters:
    all of a short message; else its best window (:func:`_window`), and where room is
    left the best window among the rest (a decision's opening sentence and its letter's
    table both answer), each widened by what follows it (the answer to the sentence
    naming the matter), then by what comes before; the opening when nothing scores."""
    if sum(len(u.text) + 1 for u in units) <= max(cap, SHORT_CHARS):
        return list(range(len(units)))
    picked: set[int] = set()
    room = cap
    for share in windows:
        if len(picked) == len(units) or room < SHORT_CHARS // 2:
            break
        score, i, j = _window([units[k] if k not in picked else _Unit("", "", frozenset()) for k in range(len(units))],
                              weights, int(room * share))
        if picked and score <= 0:
            break
        picked |= _widened(units, i, j, int(room * share), picked)
        room = cap - sum(len(units[k].text) + 1 for k in picked)
    return sorted(picked)


def _widened(units: list[_Unit], i: int, j: int, cap: int, taken: set[int]) -> set[int]:
    """The window ``i..j`` grown within ``cap`` by the units after it, then before it,
    stopping at units already ``taken``."""
    used = sum(len(units[k].text) + 1 for k in range(i, j + 1))
    while j + 1 < len(units) and j + 1 not in taken and used + len(units[j + 1].text) + 1 <= cap:
        j += 1
        used += len(units[j].text) + 1
    while i > 0 and i - 1 not in taken and used + len(units[i - 1].text) + 1 <= cap:
        i -= 1
        used += len(units[i].text) + 1
    return set(range(i, j + 1))


def _render_units(units: list[_Unit], chosen: list[int]) -> str:
    """The chosen units as one text: a sentence (or list item, or table row) a line, as
    the mail sets lists and tables out (a small model read a list joined into one line
    as one claim), a gap marked, each part other than the sender's own words named where
    it starts ("[invoice.pdf] ...", "[quoted from Jean] ...")."""
    out = ""
    previous, part = -2, "body"
    for i in chosen:
        u = units[i]
        if u.part != part and u.part != "body":
            out += ("\n" if out else "") + f"[{u.part.split(':', 1)[1]}] "
        elif u.part != part:
            out += "\n"
        elif out:
            out += "\n" if i == previous + 1 else GAP
        out += u.text
        previous, part = i, u.part
    return out


def _priority(evidence: list[EvidenceMessage], threads: dict[str, list[EvidenceMessage]]) -> list[EvidenceMessage]:
    """Messages in the order they claim the budget: relevance order, each thread's latest
    message right after the thread's first appearance (it says how a matter ended, and
    a long thread would otherwise push it out: "I'll ask them for a quote" says there is
    no price yet)."""
    out: dict[str, EvidenceMessage] = {}
    seen: set[str] = set()
    for m in evidence:
        out.setdefault(m.message_id, m)
        if m.thread_id not in seen:
            seen.add(m.thread_id)
            latest = threads[m.thread_id][-1]
            out.setdefault(latest.message_id, latest)
    return list(out.values())


def _by_relevance(
    weights: relevance.Weights,
    evidence: list[EvidenceMessage],
    units_of: dict[str, list[_Unit]],
    first: Collection[str],
) -> list[EvidenceMessage]:
    """``first`` (what a search round found), then the rest, each by its best sentence
    and its subject; search order on ties.

    Hybrid search ranks whole messages; the passages show a few sentences of each, and
    in search order the supporting message often fell outside them, where the
    question's words in the sentence itself keep it in (evals/passage_view.py). A search
    round's finds go first whatever their words: the model asked for them.
    """

    def key(m: EvidenceMessage) -> tuple[bool, float]:
        own = weights.without(relevance.terms(m.sender))
        best = _window(units_of[m.message_id], own, MESSAGE_CHARS)[0]
        said = weights.score(relevance.terms(m.sender)) + weights.score(relevance.terms(m.subject)) / 2
        return m.message_id not in first, -(best + said)

    return sorted(evidence, key=key)


def build(
    question: str, evidence: list[EvidenceMessage], *, first: Collection[str] = (), budget: int = BUDGET_CHARS
) -> list[Passage]:
    """Numbered passages for ``evidence`` within ``budget``: threads in the order of
    their most relevant message (see :func:`_by_relevance`), each thread's messages
    oldest first, so the model reads how a matter developed and where it ended."""
    evidence = list({m.message_id: m for m in evidence}.values())
    units_of = _without_held_quotes({m.message_id: _units(m) for m in evidence}, evidence)
    weights = relevance.Weights.of(question, (u.terms for units in units_of.values() for u in units))
    ranked = _by_relevance(weights, evidence, units_of, frozenset(first))
    threads: dict[str, list[EvidenceMessage]] = {}
    for m in ranked:
        threads.setdefault(m.thread_id, []).append(m)
    for messages in threads.values():
        messages.sort(key=_when)
    chosen: dict[str, tuple[str, str, tuple[tuple[str, str], ...]]] = {}  # message id -> (part, text, sentences)
    subjects: set[tuple[str, str]] = set()  # (thread, subject) a chosen message shows
    said: set[str] = set()  # sentences shown already
    used = 0
    for m in _priority(ranked, threads):
        units = units_of[m.message_id]
        if not units and steers(m.body):
            continue  # all it says is addressed to a model: nothing to show
        latest = m is threads[m.thread_id][-1] and len(threads[m.thread_id]) > 1
        topic = (m.thread_id, _topic(m.subject))
        header = HEADER_CHARS - (SUBJECT_CHARS if topic in subjects else 0)
        room = budget - used - header
        if chosen and (room < SHORT_CHARS // 2 or len(chosen) >= MAX_PASSAGES):
            break
        # The question's words for the sender ("according to Jeff King") chose the
        # message; inside it they would pick the sender's own trailer line. A sentence
        # shown already (a patch's v2 repeats its v1) picks nothing again.
        own = weights.without(relevance.terms(m.sender))
        fresh = [u if u.text not in said else _Unit(u.part, u.text, frozenset()) for u in units]
        picked = _choose(fresh, own, min(LATEST_CHARS if latest else MESSAGE_CHARS, max(room, SHORT_CHARS // 2)),
                         LATEST_WINDOWS if latest else (1.0,))
        text = _render_units(units, picked) if picked else m.subject
        # The part that holds the question's words names the passage (a decision
        # letter's attachment, though its cover note opens the window).
        part = next((units[i].part for i in picked if own.score(units[i].terms)), units[picked[0]].part) if picked else "body"
        chosen[m.message_id] = (part, text, tuple((units[i].part, units[i].text) for i in picked))
        said.update(units[i].text for i in picked)
        subjects.add(topic)
        used += len(text) + header
    passages: list[Passage] = []
    for t, messages in enumerate(threads.values(), 1):
        named: set[str] = set()
        for place, m in enumerate(messages, 1):
            if m.message_id not in chosen:
                continue
            part, text, sentences = chosen[m.message_id]
            latest = ", latest found" if place == len(messages) and len(messages) > 1 else ""
            # A reply's "Re: <the same subject>" says nothing the thread's first passage
            # did not: it is left out, and the room goes to the mail.
            topic = _topic(m.subject)
            subject = "" if topic in named else (
                m.subject if len(m.subject) <= SUBJECT_CHARS else m.subject[: SUBJECT_CHARS - 1] + "…") + " | "
            named.add(topic)
            header = f"{_date(m.date)} | {sender_name(m.sender)} | {subject}thread T{t}: {place} of {len(messages)}{latest}"
            passages.append(Passage("", m.message_id, m.thread_id, f"T{t}", part, text, header, sentences))
    return _renumber(passages)


_REPLY_PREFIX = re.compile(r"^(?:\s*(?:re|aw|wg|fwd?|tr|sv|antw)\s*(?:\[\d+\])?\s*:\s*)+", re.I)


def _topic(subject: str) -> str:
    """A subject without its reply and forward prefixes ("Re: AW: Fwd: x" is "x")."""
    return _REPLY_PREFIX.sub("", subject).strip().casefold()


def _renumber(passages: list[Passage]) -> list[Passage]:
    return [
        Passage(f"P{i}", p.message_id, p.thread_id, p.thread_ref, p.part, p.text, p.header, p.sentences)
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
