"""Verification: pure code, no I/O, no model.

:func:`verify` checks a draft sentence by sentence against the run's stored evidence;
:func:`.decide.decide` turns a :class:`VerificationRequested` and that evidence into the
one :class:`RunResult` of the run.

A sentence (after this service's own split) is kept only when

1. it has words (else ``empty_sentence``);
2. its structured citations are well-formed, and it is no page long (else ``malformed``);
3. it cites at least one message (else ``no_citation``);
4. every message it cites is in the run's evidence (else ``unknown_citation``);
5. every quoted phrase occurs, after normalisation and as whole words, in at least one
   of the messages it cites (else ``quote_not_found``);
6. every figure (number, amount, percentage, date, time, code, e-mail address, URL)
   occurs, compared as a value, in at least one of the messages it cites (else
   ``figure_not_found``, offending: the figure as written; see :mod:`.figures`);
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
   order number), a numbered week ("week 15", "KW 15") or a version ("the final
   invoice", "the corrected invoice") by a cited message; a proper name, a month, a
   quarter ("Q2", or the question's "quarterly review" with no other quarter named) or
   what an identifier is of ("my seat number", "the alarm code") by a cited message or
   another message of its thread. A true sentence about another invoice, another
   tenant's claim or April's bill does not answer about this one. Nor does a sentence
   that repeats the question's words when most of them (at least two) appear nowhere in
   its cited messages' threads: it took its subject from the question and its facts
   from a message about something else. When the thread holds one of them and the
   sentence adds words of its own that its sources hold, it is an answer in other words
   and stays;
9. it says something beyond the question's own words, unless the question is a yes/no
   one: a figure, a quote, or a word a cited message states (else
   ``restates_question``): "We agreed with Contoso about the damaged pallet." for "What
   did we agree with Contoso about the damaged pallet?" answers nothing, nor does the
   sender's name alone for "who is covering the claims desk?".

A sentence code added for the details an earlier one leaves out (``completes``, see
``services/answerer/details.py`` and ``left_out.py``) goes when that sentence goes
(``answer_removed``): a source's particulars answer nothing on their own. For the same
reason its own message need not name the question's code or week (rule 8): the sentence
it completes does ("the chairs invoice was paid today" completing the answer about
INV-2024-0173). ``completes`` must name an earlier sentence of the draft, else the
sentence is ``malformed``: the draft comes from a stage that acts on model output.

And the answer as a whole: when the question's first clause asks for a figure ("how
much", "when", "what's the number of", "the link to"), at least one kept sentence
gives one of that kind, else every sentence is removed with ``asked_figure_missing``.

For 6 and 7 a message is its body, attachments, subject and sender, and for figures
also its date ("Anna wrote on 29 November ...").

Each citation of a kept sentence carries an excerpt cut from the stored source: the
matched quote with its offsets when that message holds one of the sentence's quotes,
else the passage of that message sharing the most words with the sentence.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from services.verifier.amounts import as_amount
from services.verifier.citations import parse_structured, strip_markers
from services.verifier.figures import Figure, normalize_figures, sentence_figures
from services.verifier.normalize import Normalized
from services.verifier.question import AMOUNT, WHEN, Pinned, gives, gives_contact, pinned
from services.verifier.quotes import extract_quotes
from services.verifier.sources import Sources
from services.verifier.splitter import split_sentences
from services.verifier.support import (
    CONTACT_WORDS,
    PRICE_WORDS,
    WHEN_WORDS,
    blank_figures,
    cached_stem,
    content_words,
    done_form,
    in_english,
)
from services.verifier.support import unsupported_words as unsupported_words  # for calibration
from services.verifier.topic import MAX_OFFENDING_WORDS, off_question, off_topic
from shared.messages import (
    Answer,
    AnswerSentence,
    Citation,
    Contract,
    Draft,
    EvidenceMessage,
    RemovalReason,
    RemovedSentence,
)

_WORD = re.compile(r"\w+")
_STOPWORDS = frozenset(
    """a an and are as at be been but by did do does for from had has have he her his i if
    in into is it its me my no not of on or our she so than that the their them then there
    they this to was we were what when which who will with would you your""".split()
)
# Share of a sentence's content words that may be missing from its cited messages before
# it is removed as an unsupported claim (strictly more is removed). Calibrated on the
# labelled set with evals/calibrate_unsupported.py: on the first 25-question run, 0.5
# removed 2 of 20 sentences answering questions that must not be answered, 0.3 removed 5
# at the same cost (2 of 37 right sentences); 0.2 began removing right ones.
UNSUPPORTED_THRESHOLD = 0.3
# Sentences with fewer content words are not judged by that check, unless they deny
# something: "No, your mailbox is not full" cited to a message that never mentions a
# mailbox is a negation made up from absence, whatever its length.
MIN_CONTENT_WORDS = 3
# The longest answer sentence kept: far above any sentence a right answer has, far
# below a page.
MAX_SENTENCE_CHARS = 2000
_NEGATION = re.compile(r"\b(?:no|not|never|none|nothing|cannot)\b|n't\b", re.I)
_LEADING_NO = re.compile(r"\A\W*no\b[,.!:;]?", re.I)


class Verdict(Contract):
    """What verification made of a draft: the kept sentences and the removed ones."""

    kept: list[AnswerSentence] = []
    removed: list[RemovedSentence] = []

    def answer(self) -> Answer | None:
        if not self.kept:
            return None
        return Answer(text=" ".join(s.text for s in self.kept), sentences=self.kept)


def _units(draft: Draft) -> list[tuple[str, list[str], list[str], bool, int | None]]:
    """(text, inherited IDs, malformed citation entries, structured?, the unit it
    completes) per draft unit.

    Structured sentences win over free text when both are given: they are the more
    explicit statement of what the model meant to cite.
    """
    if draft.sentences:
        units = []
        for item in draft.sentences:
            ids, malformed = parse_structured(item.citations)
            units.append((item.text, ids, malformed, True, item.completes))
        return units
    return [(draft.text or "", [], [], False, None)]


def _content_words(norm_text: str) -> frozenset[str]:
    return frozenset(
        w for w in _WORD.findall(norm_text) if w not in _STOPWORDS and (len(w) > 1 or w.isdigit())
    )


# Words of a "how much" / "when" question that ask rather than name what is asked of.
_ASKING = frozenset(cached_stem(w) for w in "much many long need exactly".split())


def _asked_of(question: Pinned, sources: Sources, cited: list[str]) -> str | None:
    """The words naming what a "when" or "how much" question asks of, when no cited
    thread holds any of them. The date of Alice's "flying to Hamburg on 23 April" is no
    time to be at the airport, nor a freight quote's price what the movers charge: a
    figure is an answer only about what the question asks of. Names and months are
    checked as such (:func:`off_question`), and what "how much VAT" asks of by the
    check of the asked figure; mail in another language is judged by its figures alone
    (see the count of unsupported words)."""
    if question.asks not in (WHEN, AMOUNT) or question.amount_of:
        return None
    named = {cached_stem(n) for n in (*question.names, *question.months)}
    subject = sorted(question.words - named - _ASKING)
    if not subject or not any(sources[message_id].english for message_id in cited):
        return None
    context = sources.threads_of(cited)
    if any(source.has_word(w, w) for w in subject for source in context):
        return None
    return " ".join(subject[:MAX_OFFENDING_WORDS])


def _check(
    raw: str,
    inherited: list[str],
    malformed: list[str],
    sources: Sources,
    unsupported_threshold: float = UNSUPPORTED_THRESHOLD,
    question: Pinned = Pinned(),
) -> AnswerSentence | RemovedSentence:
    clean, inline = strip_markers(raw)

    def removed(reason: RemovalReason, offending: str | None = None) -> RemovedSentence:
        return RemovedSentence(text=raw, reason=reason, offending=offending)

    if not any(ch.isalnum() for ch in clean):
        return removed("empty_sentence")
    if malformed:
        return removed("malformed", malformed[0])
    if len(clean) > MAX_SENTENCE_CHARS:
        # No answer sentence is a page long; one that is would be copied, with its
        # excerpt, into the result, its events and every client's reply.
        return removed("malformed", f"{len(clean)} characters")
    cited = list(inherited)
    for message_id in inline:
        if message_id not in cited:
            cited.append(message_id)
    if not cited:
        return removed("no_citation")
    for message_id in cited:
        if message_id not in sources:
            return removed("unknown_citation", message_id)
    if question:
        offending = off_question(question, sources, cited, clean)
        if offending is not None:
            return removed("off_question", offending)

    # Every quote must be found in at least one cited message; each citation gets the
    # first of the sentence's quotes that its own message holds.
    quote_excerpts: dict[str, Citation] = {}
    quoted: list[str] = []  # verified quotes: their words are in a cited message
    for quote in extract_quotes(clean):
        fragments = quote.fragments()
        if not fragments:
            continue  # punctuation or an ellipsis alone: nothing to check
        quoted.extend(fragments)
        found = False
        for message_id in cited:
            excerpt = sources[message_id].find_quote(fragments)
            if excerpt is not None:
                found = True
                quote_excerpts.setdefault(message_id, Citation(message_id=message_id, excerpt=excerpt))
        if not found:
            return removed("quote_not_found", quote.text)

    norm = normalize_figures(clean)
    scanned = norm.text, sentence_figures(norm, clean)
    figures = [as_amount(f, norm.text) for f in scanned[1]]
    for figure in figures:
        if not any(sources[message_id].has_figure(figure) for message_id in cited):
            spelled = _spelled(clean, norm, figure)
            if spelled.casefold() in question.quarters:
                continue  # the question's quarter, which its thread names (off_question)
            return removed("figure_not_found", spelled)

    content = content_words(blank_figures(norm.text, figures))
    cited_sources = [sources[message_id] for message_id in cited]
    # A word of a verified quote occurs, as a whole word, in a cited message: no need
    # to look it up again (the outcome is the same).
    in_quotes = set(_WORD.findall(" ".join(quoted))) if quoted else frozenset()
    found = {
        word_stem for word, word_stem in content
        if word in in_quotes or any(source.has_word(word, word_stem) for source in cited_sources)
    }
    superseded = _superseded(sources, cited, clean, norm, figures, content, found, question.words)
    if superseded is not None:
        return removed("superseded", superseded)
    # A word of its own that a source states: a name that is only a cited message's
    # sender or signature ("Priya Nair presents first", cited to Priya's mail about the
    # review's date) adds nothing the message says.
    own_words = any(
        st in found and st not in question.words
        and (w in in_quotes or any(source.states(w, st) for source in cited_sources))
        for w, st in content
    )
    adds = bool(figures) or own_words
    topic = off_topic(question, content, sources, cited, own_words)
    if topic is not None:
        return removed("off_question", topic)
    subject = _asked_of(question, sources, cited) if figures else None
    if subject is not None:
        return removed("off_question", subject)
    # A bare "No," before an answer to a question that is not yes/no ("No, the dentist's
    # appointment is on Monday, 29 April" for "when is my dentist appointment?") denies
    # nothing: the small model's habit, not a claim.
    denial = clean if question.polar else _LEADING_NO.sub("", clean)
    negated = _NEGATION.search(denial) is not None
    # An answer restates its question ("the new forklifts will arrive in mid-June"): the
    # question's words are its subject, not its claim, once the sentence adds something
    # its sources hold. A denial, a sentence that adds nothing, and any answer to a
    # yes/no question ("Yes, Sabine Roth asked for new bank details") are checked whole.
    restating = adds and not negated and not question.polar
    claim = [(w, st) for w, st in content if st not in question.words] if restating else content
    if restating and question.asks == WHEN and gives(WHEN, clean, scanned):
        claim = [(w, st) for w, st in claim if st not in WHEN_WORDS]
    if figures and not negated:
        # The figures are the claim; words that only say what kind they are are not.
        if gives_contact(clean, scanned):
            claim = [(w, st) for w, st in claim if st not in CONTACT_WORDS]
        if gives(AMOUNT, clean, scanned):
            claim = [(w, st) for w, st in claim if st not in PRICE_WORDS]
    # The length that makes a sentence worth counting is the whole sentence's: "The Golf
    # claim was REJECTED" restates two words and claims one, which must then be found.
    # A sentence that translates its sources ("at the office at 12 Rue de Gerland" for
    # "dans nos bureaux au 12 rue de Gerland") shares their names and figures, not their
    # words: when every cited message is in another language, the figures found above
    # are its claim. A denial, or a sentence without a figure, is counted as usual.
    translated = bool(figures) and not negated and in_english(clean) and not any(source.english for source in cited_sources)
    if not translated and (len(content) >= MIN_CONTENT_WORDS or (negated and content)):
        missing = [word for word, word_stem in claim if word_stem not in found]
        if (negated and missing) or (claim and len(missing) / len(claim) > unsupported_threshold):
            return removed("unsupported_claim", " ".join(missing[:MAX_OFFENDING_WORDS]))

    # A "yes" that says the asked act happened ("Yes, we paid Fabrikam") cannot stand on
    # a message that names the act only as something to do ("Payment within 30 days,
    # please"): where the cited mail names it, it must say it in the past. Mail that does
    # not name it at all is paraphrase, which the count above judges ("took our offer"
    # for "that works for us"). Only the question's main clause is its act: "after we
    # sent the photos" is the question's premise, not what the answer must show.
    if question.acts and not negated:
        for word, word_stem in content:
            if (
                word_stem in question.acts
                and done_form(word.casefold())
                and word_stem in found
                and not any(source.says_done(word_stem) for source in cited_sources)
            ):
                return removed("unsupported_claim", word)

    # An answer to a question that is not yes/no says something of its own. A sentence
    # with no figure, no quote and no word a cited message states beyond the question's
    # ("We agreed with Contoso about the damaged pallet.", a sender's name alone)
    # answers nothing, however true; its details, if any, go with it (``completes``).
    if question.words and not question.polar and not adds and not quoted:
        return removed("restates_question")

    words: frozenset[str] | None = None
    citations: list[Citation] = []
    for message_id in cited:
        citation = quote_excerpts.get(message_id)
        if citation is None:
            if words is None:
                # The figures' normal form differs from normalize() only by "'" for a
                # thin space between digits, which splits words just the same.
                words = _content_words(norm.text)
            excerpt = sources[message_id].best_passage(words)
            citation = Citation(message_id=message_id, excerpt=excerpt)
        citations.append(citation)
    return AnswerSentence(text=clean, citations=citations)


def _spelled(clean: str, norm: Normalized, figure: Figure) -> str:
    """The figure as the sentence writes it."""
    start, end = norm.source_span(figure.start, figure.end)
    return clean[start:end]


def _superseded(
    sources: Sources,
    cited: list[str],
    clean: str,
    norm: Normalized,
    figures: list[Figure],
    content: list[tuple[str, str]],
    found: set[str],
    question_words: frozenset[str],
) -> str | None:
    """What a sentence standing only on messages their senders corrected says that the
    corrections do not (the old link, the old venue), or None."""
    newer = {sources.correction_of(message_id) for message_id in cited}
    if None in newer or newer & set(cited):
        return None
    corrections = [sources[message_id] for message_id in newer if message_id is not None]
    for figure in figures:
        if not any(source.has_figure(figure) for source in corrections):
            return _spelled(clean, norm, figure)
    for word, word_stem in content:
        if word_stem in found and word_stem not in question_words and not any(
            source.has_word(word, word_stem) for source in corrections
        ):
            return word
    return None


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
    verdict = Verdict()
    kept_by_unit: list[list[AnswerSentence]] = []
    completing: list[tuple[int, int]] = []  # (unit, the unit it completes)
    for unit, (text, inherited, malformed, structured, completes) in enumerate(_units(draft)):
        sentences = split_sentences(text)
        if not sentences and structured:
            verdict.removed.append(RemovedSentence(text=text, reason="empty_sentence"))
        kept_by_unit.append([])
        if completes is not None and completes >= unit:
            # Only an earlier sentence can be completed; any other index would let a
            # sentence skip the question's codes and weeks and stand on its own.
            verdict.removed.extend(
                RemovedSentence(text=sentence.text, reason="malformed", offending=f"completes={completes}")
                for sentence in sentences
            )
            continue
        if completes is not None:
            completing.append((unit, completes))
        for sentence in sentences:
            # A sentence code added to complete another is about what that one is about,
            # which names the question's codes and weeks, and goes if that one goes: Bob's
            # "the chairs invoice was paid today" completes the answer about INV-2024-0173.
            own = dataclasses.replace(pins, codes=(), weeks=()) if completes is not None else pins
            outcome = _check(sentence.text, inherited, malformed, sources, unsupported_threshold, own)
            if isinstance(outcome, AnswerSentence):
                verdict.kept.append(outcome)
                kept_by_unit[unit].append(outcome)
            else:
                verdict.removed.append(outcome)
    for unit, completes in completing:
        if completes < unit and not kept_by_unit[completes]:
            # A source's details added to a sentence that did not stand: on their own
            # they answer nothing ("EUR 1,260.00 for 42 broken tiles" under a removed
            # "the damaged stock in hall B was worth ...").
            for s in kept_by_unit[unit]:
                verdict.kept.remove(s)
                verdict.removed.append(RemovedSentence(text=s.text, reason="answer_removed"))
    if pins.asks and verdict.kept and not any(
        gives(pins.asks, s.text, months=pins.months, of=pins.amount_of) for s in verdict.kept
    ):
        # Each sentence may be true, but none gives what was asked ("how much" answered
        # without an amount): together they do not answer.
        verdict.removed.extend(
            RemovedSentence(text=s.text, reason="asked_figure_missing", offending=pins.asks)
            for s in verdict.kept
        )
        verdict.kept = []
    return verdict
