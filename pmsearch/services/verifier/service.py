"""Verification: pure code, no I/O, no model.

:func:`verify` checks a draft sentence by sentence against the run's stored evidence;
:func:`.decide.decide` turns a :class:`VerificationRequested` and that evidence into the
one :class:`RunResult` of the run.

A sentence (after this service's own split) is kept only when no rule of :mod:`.rules`
removes it. The rules run in the order of ``rules.RULES`` over the sentence's facts
(:mod:`.facts`, each computed once); the first that removes it names why. What they ask
(listed by subject; ``RULES`` gives the order):

1. it has words (else ``empty_sentence``);
2. its structured citations are well-formed, and it is no page long (else ``malformed``);
3. it cites at least one message (else ``no_citation``);
4. every message it cites is in the run's evidence (else ``unknown_citation``);
5. every quoted phrase occurs, after normalisation and as whole words, in at least one
   of the messages it cites (else ``quote_not_found``);
6. every figure (number, amount, percentage, date, time, code, e-mail address, URL)
   occurs, compared as a value, in at least one of the messages it cites (else
   ``figure_not_found``, offending: the figure as written; see :mod:`pmsearch.shared.text.figures`);
7. at most ``unsupported_threshold`` of its content words (stemmed, stop words and
   generic answer words left out, quotes included) are missing from all of the messages
   it cites, once it has at least ``MIN_CONTENT_WORDS`` of them, and none at all when
   it denies something ("No, your mailbox is not full"; a bare leading "No," before an
   answer to a question that is not yes/no denies nothing) (else ``unsupported_claim``,
   offending: up to five missing words; see :mod:`.support`).
   A real quote cannot carry an invented claim past this. The question's words a
   sentence restates are its subject, not its claim, and are left out of the count
   when the sentence adds something its sources hold (a figure, or a word of its own
   that a source states, not only as its sender's name or sign-off), denies nothing and
   does not answer a yes/no question ("the new forklifts will arrive in mid-June" for a
   message saying "delivery expected in mid-June"); otherwise they count like any. In an
   answer to "when" that gives the time, words that only say it happens then
   ("scheduled", "takes place") do not count either;
8. what the question pins down is named by its sources (else ``off_question``,
   offending: what is missing; see :mod:`.question`): a code (an invoice, claim or
   order number) or a version ("the final invoice", "the corrected invoice") by a cited
   message; a proper name or a month by a cited message or another message of its
   thread. A true sentence about another invoice, another tenant's claim or April's
   bill does not answer about this one. A sentence that repeats the question's words
   must find one of them where its claim comes from (the cited message's sentences
   that carry the claim, its subject or its sender): otherwise it took its subject from
   the question and its fact from a message about another matter;
9. it does not stand only on messages their senders corrected when the corrections do
   not say it too (else ``superseded``, offending: the old figure or word; see
   :mod:`.corrections`).

A sentence code added for the details an earlier one leaves out (``completes``, see
``pmsearch/services/answerer/details.py`` and ``left_out.py``), or a later sentence the
model wrote after the answer (``follows``, see ``padding.py``), goes when that sentence
goes (``answer_removed``): a source's particulars answer nothing on their own, and what
the model added to an answer that did not stand rests on nothing. For the same
reason its own message need not name the question's code (rule 8): the sentence
it completes does ("the chairs invoice was paid today" completing the answer about
INV-2024-0173). ``completes`` must name an earlier sentence of the draft, else the
sentence is ``malformed``: the draft comes from a stage that acts on model output.

In the ``write_or_extract`` style a sentence the model wrote carries the sentence of
the mail it was made from (``fallback``, code's quote of a cited message; see
``pmsearch/services/answerer/fallback.py``). Where the written sentence is removed for
what it claims (:data:`CLAIM_REASONS`), or kept with words of its claim that no cited
message holds, the mail's sentence takes its place when it passes every rule itself; the
written one is recorded as removed with ``replaced``. One stand-in a unit, and never for
a sentence about another matter or one its senders corrected: the mail's sentence is
that too.

And the answer as a whole: when the question's first clause asks for a figure ("how
much", "when", "what's the number of", "the link to"), at least one kept sentence
gives one of that kind, else every sentence is removed with ``asked_figure_missing``.
When the question asks yes or no and kept sentences open with both verdicts ("Yes, ...",
"No, ..."), every sentence is removed with ``contradictory``: together they answer
nothing.

For 6 and 7 a message is its body, attachments, subject and sender, and for figures
also its date ("Anna wrote on 29 November ...").

Each citation of a kept sentence carries an excerpt cut from the stored source: the
matched quote with its offsets when that message holds one of the sentence's quotes,
else the one or two sentences of that message that carry it (:mod:`pmsearch.shared.text.align`),
or, when those are long or share nothing with it, the passage sharing the most words.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from pmsearch.services.verifier.facts import SentenceFacts
from pmsearch.services.verifier.question import Pinned, gives, pinned
from pmsearch.services.verifier.rules import UNSUPPORTED_THRESHOLD, first_removal
from pmsearch.services.verifier.sources import Sources
from pmsearch.services.verifier.topic import MAX_OFFENDING_WORDS
from pmsearch.shared.messages import (
    Answer,
    AnswerSentence,
    AnswerStyle,
    Citation,
    Contract,
    Draft,
    EvidenceMessage,
    RemovalReason,
    RemovedSentence,
    SourceSentence,
)
from pmsearch.shared.text.citations import parse_structured, strip_markers
from pmsearch.shared.text.sentences import split_sentences
from pmsearch.shared.text.words import STOP_WORDS, WORD

# A cited message's excerpt is the sentence (or two) that carries the answer's sentence
# (shared.text.align), unless that is longer than this: then its words' best passage.
MAX_EXCERPT_CHARS = 400

# The reasons the answer as a whole gives (in verify()); every other is a sentence rule's
# (pmsearch/services/verifier/rules.py).
ANSWER_REASONS: tuple[RemovalReason, ...] = ("answer_removed", "asked_figure_missing", "contradictory")
# What a sentence is removed for that the mail's sentence it was made from may answer in
# its place (answer style write_or_extract): what it claims. A sentence about another
# matter, or one its senders corrected, is so whichever words say it.
CLAIM_REASONS: tuple[RemovalReason, ...] = ("quote_not_found", "figure_not_found", "unsupported_claim")
# Reasons no rule gives any more; results stored while one did still carry them.
RETIRED_REASONS: tuple[RemovalReason, ...] = ("restates_question",)
# Answer rules switched off, to measure what each removes (evals/rule_counts.py); never
# set by the service.
SWITCHED_OFF: frozenset[str] = frozenset()


class Verdict(Contract):
    """What verification made of a draft: the kept sentences and the removed ones."""

    kept: list[AnswerSentence] = []
    removed: list[RemovedSentence] = []
    style: AnswerStyle = "write"  # the draft's

    def answer(self) -> Answer | None:
        if not self.kept:
            return None
        return Answer(text=" ".join(s.text for s in self.kept), sentences=self.kept, style=self.style)


@dataclasses.dataclass(frozen=True)
class _Unit:
    """One draft unit as the verifier reads it (structured sentences win over free text
    when both are given: they are the more explicit statement of what the model meant
    to cite)."""

    text: str
    inherited: list[str]  # the message ids it cites
    malformed: list[str]  # its citation entries that are no message id
    structured: bool
    rests: int | None = None  # the unit it completes or follows
    details: bool = False  # whether it completes that unit with code's details
    fallback: SourceSentence | None = None  # the mail's sentence it was made from


def _units(draft: Draft) -> list[_Unit]:
    if draft.sentences:
        units = []
        for item in draft.sentences:
            ids, malformed = parse_structured(item.citations)
            rests = item.completes if item.completes is not None else item.follows
            units.append(_Unit(item.text, ids, malformed, True, rests, item.completes is not None, item.fallback))
        return units
    return [_Unit(draft.text or "", [], [], False)]


# The verdict an answer to a yes/no question opens with, in the languages of the mail
# served; a statement of the mail opens with its sender's name and gives none.
_VERDICT = re.compile(r"\A\W*(?:(?P<yes>yes|oui|ja)|(?P<no>no|non|nein))\b", re.I)


def _verdicts(kept: list[AnswerSentence]) -> set[str]:
    """The verdicts ("yes", "no") the kept sentences open with."""
    found = (_VERDICT.match(s.text) for s in kept)
    return {m.lastgroup for m in found if m is not None and m.lastgroup is not None}


def _content_words(norm_text: str) -> frozenset[str]:
    return frozenset(
        w for w in WORD.findall(norm_text) if w not in STOP_WORDS and (len(w) > 1 or w.isdigit())
    )


def _check(
    raw: str,
    inherited: list[str],
    malformed: list[str],
    sources: Sources,
    unsupported_threshold: float = UNSUPPORTED_THRESHOLD,
    question: Pinned = Pinned(),
) -> AnswerSentence | RemovedSentence:
    """The sentence kept, with an excerpt per citation, or why it is removed (:mod:`.rules`)."""
    return _checked(raw, inherited, malformed, sources, unsupported_threshold, question)[0]


def _checked(
    raw: str,
    inherited: list[str],
    malformed: list[str],
    sources: Sources,
    unsupported_threshold: float,
    question: Pinned,
) -> tuple[AnswerSentence | RemovedSentence, SentenceFacts]:
    clean, inline = strip_markers(raw)
    cited = tuple(dict.fromkeys([*inherited, *inline]))
    facts = SentenceFacts(raw, clean, cited, tuple(malformed), sources, question)
    removal = first_removal(facts, unsupported_threshold)
    if removal is not None:
        return RemovedSentence(text=raw, reason=removal.reason, offending=removal.offending), facts
    words: frozenset[str] | None = None
    citations: list[Citation] = []
    for message_id, aligned in zip(cited, facts.aligned, strict=True):
        citation = facts.quotes.excerpts.get(message_id)
        excerpt = None if citation is not None else aligned.excerpt(MAX_EXCERPT_CHARS)
        if citation is None and excerpt is None:
            if words is None:
                # The figures' normal form differs from normalize() only by "'" for a
                # thin space between digits, which splits words just the same.
                words = _content_words(facts.norm.text)
            excerpt = sources[message_id].best_passage(words)
        citations.append(citation or Citation(message_id=message_id, excerpt=excerpt))
    return AnswerSentence(text=clean, citations=citations), facts


def _replaced(
    outcome: AnswerSentence | RemovedSentence, facts: SentenceFacts, fallback: SourceSentence,
    sources: Sources, unsupported_threshold: float, question: Pinned,
) -> tuple[AnswerSentence, RemovedSentence] | None:
    """The mail's sentence in place of a written one that says what its sources do not
    (removed for its claim, or kept with words they lack), when the mail's sentence
    passes every rule itself: the kept stand-in and the written sentence's record."""
    if isinstance(outcome, RemovedSentence):
        if outcome.reason not in CLAIM_REASONS:
            return None
        record = outcome
    else:
        unfound = facts.unfound
        if not unfound or "unaligned" in SWITCHED_OFF:
            return None
        record = RemovedSentence(
            text=facts.raw, reason="unsupported_claim", offending=" ".join(unfound[:MAX_OFFENDING_WORDS])
        )
    stand_in = _check(fallback.text, fallback.citations, [], sources, unsupported_threshold, question)
    if not isinstance(stand_in, AnswerSentence):
        return None
    return stand_in, record.model_copy(update={"replaced": True})


def verify(
    draft: Draft,
    evidence: Mapping[str, EvidenceMessage],
    *,
    unsupported_threshold: float = UNSUPPORTED_THRESHOLD,
    question: str = "",
) -> Verdict:
    """Split ``draft`` and keep only the sentences that pass every rule (module docstring).

    ``evidence`` is the run's evidence as the searcher stored it, keyed by message ID.
    ``unsupported_threshold`` is the share of missing content words above which a
    sentence is an unsupported claim. ``question`` supplies what a sentence's sources
    must name (``off_question``) and the kind of figure the answer must give
    (``asked_figure_missing``).
    """
    sources = Sources(evidence)
    pins = pinned(question)
    verdict = Verdict(style=draft.style)
    kept_by_unit: list[list[AnswerSentence]] = []
    completing: list[tuple[int, int]] = []  # (unit, the unit it rests on)
    for index, unit in enumerate(_units(draft)):
        sentences = split_sentences(unit.text)
        if not sentences and unit.structured:
            verdict.removed.append(RemovedSentence(text=unit.text, reason="empty_sentence"))
        kept_by_unit.append([])
        rests = unit.rests
        if rests is not None and rests >= index:
            # Only an earlier sentence can be completed; any other index would let a
            # sentence skip the question's codes and stand on its own.
            verdict.removed.extend(
                RemovedSentence(
                    text=sentence.text, reason="malformed",
                    offending=f"{'completes' if unit.details else 'follows'}={rests}",
                )
                for sentence in sentences
            )
            continue
        if rests is not None:
            completing.append((index, rests))
        fallback = unit.fallback
        for sentence in sentences:
            # A sentence code added to complete another is about what that one is about,
            # which names the question's codes, and goes if that one goes: Bob's
            # "the chairs invoice was paid today" completes the answer about INV-2024-0173.
            own = dataclasses.replace(pins, codes=()) if unit.details else pins
            outcome, facts = _checked(sentence.text, unit.inherited, unit.malformed, sources, unsupported_threshold, own)
            replaced = None
            if fallback is not None and "fallback" not in SWITCHED_OFF:
                replaced = _replaced(outcome, facts, fallback, sources, unsupported_threshold, own)
            if replaced is not None:
                # One stand-in a unit: it is the mail's sentence the whole unit was made from.
                fallback = None
                outcome, record = replaced
                verdict.removed.append(record)
                if any(k.text == outcome.text for k in verdict.kept):
                    continue  # code's details already quote it
            if isinstance(outcome, AnswerSentence):
                verdict.kept.append(outcome)
                kept_by_unit[index].append(outcome)
            else:
                verdict.removed.append(outcome)
    for unit, rests in completing:
        if rests < unit and not kept_by_unit[rests] and "answer_removed" not in SWITCHED_OFF:
            # A source's details added to a sentence that did not stand: on their own
            # they answer nothing ("EUR 1,260.00 for 42 broken tiles" under a removed
            # "the damaged stock in hall B was worth ...").
            for s in kept_by_unit[unit]:
                verdict.kept.remove(s)
                verdict.removed.append(RemovedSentence(text=s.text, reason="answer_removed"))
    if pins.polar and "contradictory" not in SWITCHED_OFF and len(_verdicts(verdict.kept)) > 1:
        # "Yes, Julie asked for further changes. No, Julie did not ask for any": each
        # sentence may stand on its source, but together they answer nothing.
        verdict.removed.extend(RemovedSentence(text=s.text, reason="contradictory") for s in verdict.kept)
        verdict.kept = []
    if pins.asks and verdict.kept and "asked_figure_missing" not in SWITCHED_OFF and not any(
        gives(pins.asks, s.text, months=pins.months) for s in verdict.kept
    ):
        # Each sentence may be true, but none gives what was asked ("how much" answered
        # without an amount): together they do not answer.
        verdict.removed.extend(
            RemovedSentence(text=s.text, reason="asked_figure_missing", offending=pins.asks)
            for s in verdict.kept
        )
        verdict.kept = []
    return verdict
