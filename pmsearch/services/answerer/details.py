"""The details an answer leaves out, in its source's own words.

The embedded model answers the gist and drops the particulars its source gives beside
it: "The Elbe room is booked for the board meeting" from "the Elbe room is booked for
22 May from 8:30 to 13:00, lunch for 9 from Deli Hafenblick at 12:30"; "Sabine Roth is
handling the claim" from "Your adjuster is Sabine Roth (sabine.roth@..., +49 40 ...)".
Asked again, it mostly writes the same sentence. Code finds the sentence of the answer's
own source that the answer is made from (it shares the answer's words, or gives a kind
of fact the question asks for and the answer lacks) and that holds details the answer
does not: a date, a time, an amount, a number, an e-mail address, a phone number, a
link or a code. That sentence is added word for word with who wrote it and when,
cited to its message, and so is the one after it when that gives an amount or a date
the answer lacks ("... the claim is accepted." / "We will pay EUR 2,115.50: ...").
The verifier checks them like any quote, and removes them with the sentence they
complete (``completes``, reason ``answer_removed``): on their own they answer nothing.

Only the first sentence's sources are read: the first sentence is the answer, and a
detail of a message it does not rest on answers something else. Measured on the
labelled set's drafts (``evals/replay_verifier.py --answerer``), see
``docs/evaluation.md``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pmsearch.services.answerer.statements import attachment_sentences, quotable, sentences, statement
from pmsearch.services.answerer.values import details, given
from pmsearch.shared.messages import DraftSentence, EvidenceMessage
from pmsearch.shared.text import question as asked
from pmsearch.shared.text.mail import sender_name
from pmsearch.shared.text.shapes import missing
from pmsearch.shared.text.words import prefix_stems as stems

# A sentence the answer is made from shares at least this many of the answer's
# content words (stems) with it.
MIN_SHARED = 2

# An answer that denies or refuses ("not mentioned", "no glass cover") is not made from
# a sentence whose details could complete it.
_DENIES = re.compile(r"\b(?:not|no|never|none|cannot)\b|n't\b", re.I)


@dataclass(frozen=True)
class _Wanted:
    """What the answer's first sentence says and lacks, for the question asked."""

    question: str
    answer_words: set[str]
    question_words: set[str]
    have: set[str]  # the answer's details, as values
    lacking: set[str]  # the kinds of fact the question asks for that the answer lacks


def detail_statements(
    question: str, answer: Sequence[DraftSentence], evidence: Sequence[EvidenceMessage]
) -> list[DraftSentence]:
    """The sentence of the answer's source that the answer is made from and that holds
    details the answer leaves out, and the sentence after it when that one gives an
    amount or a date the answer lacks ("the claim is accepted." / "We will pay EUR
    2,115.50: ..."), as statements completing the first sentence; none when there is
    no such sentence."""
    if not answer or not answer[0].citations or _DENIES.search(answer[0].text):
        return []
    first = answer[0].text
    have = given(details(" ".join(s.text for s in answer)))
    wanted = _Wanted(question, stems(first), stems(question), have, set(missing(question, [first])))
    sources = [m for m in evidence if m.message_id in answer[0].citations]
    # The mail's own words first, then what they announce; an attachment's sentences
    # only when neither holds a detail (the KPI report's table, not the mail's summary
    # of it, holds "94.1%"; a decision letter's PDF repeats what its mail says), and
    # two of them: a report's row gives the figure, its remark the reason.
    return (
        _made_from(wanted, sources, sentences, follow=True)
        or _what_follows(question, first, have, wanted.lacking, sources)
        or _made_from(wanted, sources, attachment_sentences, take=2)
        or _when_it_happens(wanted.question_words, have, sources)
    )


def _made_from(
    wanted: _Wanted,
    sources: Sequence[EvidenceMessage],
    read: Callable[[EvidenceMessage], list[str]],
    *,
    follow: bool = False,
    take: int = 1,
) -> list[DraftSentence]:
    """The ``take`` sentences ``read`` finds in the sources that the answer is made from
    and that hold details it leaves out, best first; with ``follow``, and the one after
    the best when that gives an amount or a date the answer lacks."""
    ranked: list[tuple[tuple[int, int, int], EvidenceMessage, list[str], int]] = []
    for order, m in enumerate(sources):
        said = read(m)
        for i, sentence in enumerate(said):
            if not quotable(sentence):
                continue
            found = details(sentence)
            if not found - wanted.have:
                continue
            words = stems(sentence)
            # Its words, not its figures: a figure alone ("EUR 100 million" for "$100")
            # is how an answer about something else borrows a source.
            shared = len(wanted.answer_words & words)
            gives_lacking = wanted.lacking - set(missing(wanted.question, [sentence]))
            if gives_lacking and (wanted.answer_words | wanted.question_words) & words:
                shared += MIN_SHARED  # gives what the question asks and the answer lacks
            if shared >= MIN_SHARED:
                ranked.append(((shared, len(found & wanted.have), -(order * 1000 + i)), m, said, i))
    ranked.sort(key=lambda r: r[0], reverse=True)
    out = [statement(m, said[i]).model_copy(update={"completes": 0}) for _, m, said, i in ranked[:take]]
    if follow and ranked:
        _, m, said, i = ranked[0]
        if i + 1 < len(said) and quotable(said[i + 1]):
            after = {d for d in details(said[i + 1]) if d.startswith(("amount:", "date:"))}
            if after - wanted.have - details(said[i]):
                out.append(statement(m, said[i + 1]).model_copy(update={"completes": 0}))
    return out


def with_details(
    question: str, answer: Sequence[DraftSentence], evidence: Sequence[EvidenceMessage]
) -> list[DraftSentence]:
    """``answer`` with its source's sentences of details added after it."""
    return [*answer, *detail_statements(question, answer, evidence)]


# The sentences after a line that ends in a colon, at most: a decision letter's "we have
# decided on claim HM-88213 (...):" is followed by what was decided, item by item.
MAX_FOLLOWING = 4
# The kinds a question may ask for that a following sentence can give, as values.
_GIVES = {asked.AMOUNT: ("amount:",), asked.DATE: ("date:",), asked.WHEN: ("date:", "time:"), asked.TIME: ("time:",)}


def _what_follows(
    question: str, first: str, have: set[str], lacking: set[str], sources: Sequence[EvidenceMessage]
) -> list[DraftSentence]:
    """When the answer is made from a sentence that holds no details of its own: what
    follows it, if that sentence announces it (ends in a colon); the next sentence, if
    it gives a kind of fact the question asks for and the answer lacks ("Expense report
    EXP-2024-0048 by Dana Weber was approved." / "... Amount: EUR 121.34"); else the
    sentence itself, if it covers a part of the question the answer left out whole
    ("..., and are we leasing them?": "approved: buy them, no leasing") or the answer borrowed its
    writer's first person ("in the key safe in my office": whose office the quote says).
    A sentence's writer counts among its words: "Tom approved" is made from Tom's mail."""
    answer_words = stems(first)
    made_from: tuple[int, EvidenceMessage, list[str], int] | None = None
    for m in sources:
        said, writer = sentences(m), stems(sender_name(m.sender))
        for i, sentence in enumerate(said):
            shared = len(answer_words & (stems(sentence) | writer))
            if shared >= MIN_SHARED and quotable(sentence) and (made_from is None or shared > made_from[0]):
                made_from = (shared, m, said, i)
    if made_from is None:
        return []
    _, m, said, i = made_from
    following = [s for s in said[i + 1 : i + 1 + MAX_FOLLOWING] if quotable(s)]
    wanted = tuple(prefix for kind in lacking for prefix in _GIVES.get(kind, ()))
    if said[i].rstrip().endswith(":"):
        taken = following
    elif following and wanted and any(d.startswith(wanted) for d in details(following[0]) - have):
        taken = following[:1]
    elif left_out_part(question, answer_words) & stems(said[i]) or (
        _FIRST_PERSON.search(first) and _FIRST_PERSON.search(said[i])
    ):
        taken = [said[i]]
    else:
        taken = []
    return [statement(m, s).model_copy(update={"completes": 0}) for s in taken]


# A question's clauses: "Did Tom approve the two forklifts, and are we leasing them?"
_CLAUSES = re.compile(r"\?|,?\s+(?:and|or)\s+|,\s+", re.I)


def left_out_part(question: str, answer_words: set[str]) -> set[str]:
    """The words of the question's clauses that the answer shares no word with, when
    the question has more than one."""
    clauses = [stems(c) for c in _CLAUSES.split(question)]
    clauses = [c for c in clauses if c]
    if len(clauses) < 2:
        return set()
    return {w for c in clauses if not c & answer_words for w in c}


_FIRST_PERSON = re.compile(r"\b(?:I|[Mm]y|[Mm]e|[Mm]ine)\b")


def _when_it_happens(question_words: set[str], have: set[str], sources: Sequence[EvidenceMessage]) -> list[DraftSentence]:
    """For an answer without a date: the sentence of its source that names what the
    question is about (shares at least MIN_SHARED of its words) and gives the date
    ("Where is the team offsite?": "Kloster Seeon on Lake Seeon" / "our team offsite
    takes place on Friday, 7 June")."""
    if any(d.startswith("date:") for d in have):
        return []
    best: tuple[int, int, EvidenceMessage, str] | None = None
    for order, m in enumerate(sources):
        for i, sentence in enumerate(sentences(m)):
            shared = len(question_words & stems(sentence))
            if shared < MIN_SHARED or not quotable(sentence):
                continue
            if not any(d.startswith("date:") for d in details(sentence) - have):
                continue
            rank = (shared, -(order * 1000 + i))
            if best is None or rank > best[:2]:
                best = (*rank, m, sentence)
    return [] if best is None else [statement(best[2], best[3]).model_copy(update={"completes": 0})]
