"""When the mail disagrees with the answer: the other statements, copied by code.

Two messages can give one meeting two dates (Priya moves the review to Tuesday 14 May,
Tom announces it for Thursday 16 May) or one invoice two amounts (the invoice says
EUR 1,250.00, a colleague says it should be EUR 1,520.00). The embedded model answers
from one of them, although the prompt asks for both versions; a reader told only one
is misled. Code finds the others: a sentence of another evidence message that names
what the question is about (its invoice or claim code, else all its words, or all but one of many) and
gives a date or amount of the asked kind that the answer does not hold. It is added
word for word with who wrote it and when (``Tom Richter, 3 May: "..."``), cited to its
message, and the verifier checks it like any sentence.

Only dates and amounts: a time or a place differs for many honest reasons (a second
meeting, a delivery address), a date or an amount for one named thing rarely does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pmsearch.services.answerer.statements import quotable, sentences, statement
from pmsearch.services.answerer.values import amounts, dates
from pmsearch.shared.messages import DraftSentence, EvidenceMessage
from pmsearch.shared.text import question as asked
from pmsearch.shared.text.words import prefix_stems as stems

MAX_ADDED = 2

# Words that ask rather than name what the question is about (as shared.text.words.prefix_stems
# cuts them).
_ASKING = stems("much many long often get got say said tell know check look find see")


def _values(kind: str, text: str) -> set:
    return dates(text) if kind == "date" else amounts(text)


def _kinds(question: str) -> list[str]:
    """Which of a date and an amount the question asks for."""
    asks = {k for _, kinds in asked.parts(question) for k in kinds}
    out = []
    if asks & {asked.DATE, asked.WHEN}:
        out.append("date")
    if asked.AMOUNT in asks:
        out.append("amount")
    return out


@dataclass(frozen=True)
class Subject:
    """What the question is about: its codes, names and content-word stems."""

    codes: tuple[str, ...]
    names: list[str]
    words: set[str]


def _about(subject: Subject, m: EvidenceMessage, sentence: str) -> int:
    """How strongly ``sentence`` of ``m`` names what the question is about: 0 when it
    does not. The question's names must be in it or in its message's subject; a code
    the question names must be in it; without a code, all of the question's words (all
    but one of four or more; at least two): "moving boxes" and a move's date in a
    removal quote are not the boxes' delivery."""
    low, title = sentence.casefold(), m.subject.casefold()
    if not all(re.search(rf"\b{re.escape(n)}\b", low) or re.search(rf"\b{re.escape(n)}\b", title)
               for n in subject.names):
        return 0
    if subject.codes:
        return len(subject.words) + 1 if all(c.casefold() in low for c in subject.codes) else 0
    shared = len(subject.words & stems(sentence))
    n = len(subject.words)
    return shared if shared >= max(2, n if n <= 3 else n - 1) else 0


def other_statements(
    question: str, answer: Sequence[DraftSentence], evidence: Sequence[EvidenceMessage]
) -> list[DraftSentence]:
    """Sentences of other evidence messages that give what the question asks for
    differently from ``answer`` (see the module docstring), at most ``MAX_ADDED``, the
    closest to the question first."""
    kinds = _kinds(question)
    if not kinds or not answer:
        return []
    # The first sentence is the answer; the model's later ones may be its own attempt at
    # the other version, often worded past what the source says (see with_other_statements).
    said = answer[0].text
    cited = set(answer[0].citations)
    pinned = asked.pins(question)
    subject = Subject(pinned.codes, list(pinned.names), stems(question) - _ASKING)
    found: list[tuple[int, float, frozenset, DraftSentence]] = []
    for m in evidence:
        if m.message_id in cited:
            continue
        for sentence in sentences(m):
            if not quotable(sentence):
                continue
            score = _about(subject, m, sentence)
            if not score:
                continue
            for kind in kinds:
                given, stated = _values(kind, said), _values(kind, sentence)
                if given and stated - given:
                    newest = m.date.timestamp() if m.date else 0.0
                    found.append((score, newest, frozenset(stated), statement(m, sentence)))
                    break
    found.sort(key=lambda f: (-f[0], -f[1]))
    out: list[DraftSentence] = []
    versions: set[frozenset] = set()
    for _, _, stated, sentence in found:
        if stated not in versions:  # one statement of each other version
            versions.add(stated)
            out.append(sentence)
    return out[:MAX_ADDED]


def with_other_statements(
    question: str, answer: Sequence[DraftSentence], evidence: Sequence[EvidenceMessage]
) -> list[DraftSentence]:
    """``answer`` with the other statements added; a later sentence of the model's that
    gives one of them in its own words, citing the same message, gives way to the words
    of the message ("The latest message says that the right date is Thursday, 16 May"
    claims more than Tom's mail states, and the verifier would remove it)."""
    added = other_statements(question, answer, evidence)
    if not added:
        return list(answer)
    kinds = _kinds(question)

    def superseded(s: DraftSentence) -> bool:
        return any(
            set(s.citations) <= set(a.citations)
            and any(_values(k, s.text) and _values(k, s.text) <= _values(k, a.text) for k in kinds)
            for a in added
        )

    return [answer[0], *(s for s in answer[1:] if not superseded(s)), *added]
