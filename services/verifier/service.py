"""Verification and the outcome of a run: pure code, no I/O, no model.

:func:`verify` checks a draft sentence by sentence against the run's stored evidence;
:func:`decide` turns a :class:`VerificationRequested` and that evidence into the one
:class:`RunResult` of the run.

A sentence (after this service's own split) is kept only when

1. it has words (else ``empty_sentence``);
2. its structured citations are well-formed (else ``malformed``);
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
INV-2024-0173).

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
import logging
import re
import time
from collections.abc import Mapping
from datetime import UTC

from services.verifier.amounts import as_amount
from services.verifier.citations import parse_structured, strip_markers
from services.verifier.figures import normalize_figures, sentence_figures
from services.verifier.outcome import degraded_hits, model_note, reason_code
from services.verifier.question import AMOUNT, IDENTIFIER, WHEN, Pinned, gives, gives_contact, pinned, week_names
from services.verifier.quotes import extract_quotes
from services.verifier.sources import Source, Sources
from services.verifier.splitter import split_sentences
from services.verifier.support import CONTACT_WORDS, PRICE_WORDS, WHEN_WORDS, blank_figures, cached_stem, content_words
from services.verifier.support import unsupported_words as unsupported_words  # for calibration
from shared.messages import (
    Answer,
    AnswerSentence,
    Citation,
    Contract,
    Draft,
    EvidenceMessage,
    EvidenceSummary,
    RemovalReason,
    RemovedSentence,
    RunResult,
    ToolCall,
    Trace,
    VerificationRequested,
)

log = logging.getLogger("pmsearch.verifier")

_WORD = re.compile(r"\w+")
_STOPWORDS = frozenset(
    """a an and are as at be been but by did do does for from had has have he her his i if
    in into is it its me my no not of on or our she so than that the their them then there
    they this to was we were what when which who will with would you your""".split()
)
SNIPPET_CHARS = 200
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
_NEGATION = re.compile(r"\b(?:no|not|never|none|nothing|cannot)\b|n't\b", re.I)
_LEADING_NO = re.compile(r"\A\W*no\b[,.!:;]?", re.I)
MAX_OFFENDING_WORDS = 5


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
        offending = _off_question(question, sources, cited, clean)
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
            start, end = norm.source_span(figure.start, figure.end)
            if clean[start:end].casefold() in question.quarters:
                continue  # the question's quarter, which its thread names (off_question)
            return removed("figure_not_found", clean[start:end])

    content = content_words(blank_figures(norm.text, figures))
    cited_sources = [sources[message_id] for message_id in cited]
    # A word of a verified quote occurs, as a whole word, in a cited message: no need
    # to look it up again (the outcome is the same).
    in_quotes = set(_WORD.findall(" ".join(quoted))) if quoted else frozenset()
    found = {
        word_stem for word, word_stem in content
        if word in in_quotes or any(source.has_word(word, word_stem) for source in cited_sources)
    }
    # A word of its own that a source states: a name that is only a cited message's
    # sender or signature ("Priya Nair presents first", cited to Priya's mail about the
    # review's date) adds nothing the message says.
    own_words = any(
        st in found and st not in question.words
        and (w in in_quotes or any(source.states(w, st) for source in cited_sources))
        for w, st in content
    )
    adds = bool(figures) or own_words
    topic = _off_topic(question, content, sources, cited, own_words)
    if topic is not None:
        return removed("off_question", topic)
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
    if len(content) >= MIN_CONTENT_WORDS or (negated and content):
        missing = [word for word, word_stem in claim if word_stem not in found]
        if (negated and missing) or (claim and len(missing) / len(claim) > unsupported_threshold):
            return removed("unsupported_claim", " ".join(missing[:MAX_OFFENDING_WORDS]))

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


def _off_question(question: Pinned, sources: Sources, cited: list[str], sentence: str) -> str | None:
    """The first thing the question pins down that the sentence's sources never name.

    A code or a numbered week must be named by a cited message itself; a name, month or
    quarter may also be named by another message of a cited thread (see :mod:`.question`).
    """
    for code in question.codes:
        if not any(sources[message_id].mentions(code) for message_id in cited):
            return code
    for week in question.weeks:
        if not any(sources[message_id].mentions(name) for name in week_names(week) for message_id in cited):
            return f"week {week}"
    for word in question.versions:
        if not any(sources[message_id].mentions(word) for message_id in cited):
            return word
    if question.speakers and not any(
        sources[message_id].written_by(name) for name in question.speakers for message_id in cited
    ):
        return " and ".join(" ".join(name) for name in question.speakers)
    which = question.which if question.which and not gives(IDENTIFIER, sentence) else ()
    in_thread = question.names or question.months or question.quarters or question.identifies or question.kinds or which
    context = sources.threads_of(cited) if in_thread else []
    for name in question.names:
        if not any(source.names(name) for source in context):
            return name
    for word in question.identifies:
        if not any(source.has_word(word, cached_stem(word)) for source in context):
            return word
    for prefix in (*question.kinds, *which):
        if not any(source.has_prefix(prefix) for source in context):
            return prefix
    for month in question.months:
        if not any(source.in_month(month) for source in context):
            return month
    for quarter in question.quarters:
        if not _names_quarter(quarter, question.quarterly, context):
            return quarter.upper()
    return None


def _names_quarter(quarter: str, words: tuple[str, ...], context: list[Source]) -> bool:
    """Whether the thread names ``quarter`` ("Q2"), or holds what the question calls it
    (``words``: "quarterly review") and names no other quarter: Tom's "the quarterly
    review will take place on Thursday, 16 May" is about the Q2 review; a stand-up's
    "quarterly stock count" is not, nor is the Q3 review's thread."""
    if any(source.mentions(quarter) for source in context):
        return True
    if not words or not all(any(source.mentions(w) for source in context) for w in words):
        return False
    others = [f"q{n}" for n in range(1, 5) if f"q{n}" != quarter]
    return not any(source.mentions(other) for source in context for other in others)


def _off_topic(
    question: Pinned, content: list[tuple[str, str]], sources: Sources, cited: list[str], own_words: bool
) -> str | None:
    """The question's words a sentence repeats but its sources never use, when they are
    most of them (and at least two): the sentence took its subject from the question
    and its facts from a message about something else ("the team offsite costs EUR 685
    per weekly run", cited to a freight quote). A word may come from any message of a
    cited thread. Calibrated on the labelled set: on the 2026-11-30 drafts it removed
    two answers to questions that must not be answered and no right one."""
    repeated = [(w, st) for w, st in content if st in question.words]
    if len(repeated) < 2:
        return None
    context = sources.threads_of(cited)
    lost = [w for w, st in repeated if not any(source.has_word(w, st) for source in context)]
    if len(lost) < 2 or len(lost) * 2 <= len(repeated):
        return None
    # The thread shares one of the question's words and the sentence adds words of its
    # own that its sources hold: an answer in other words ("arrive in mid-June" for
    # "delivery expected in mid-June"). A figure alone is not enough: "the team offsite
    # is costing $100 per person" shares only "cost" with a newsletter's "EUR 100
    # million", whose 100 the figures check accepts.
    if own_words and len(lost) < len(repeated):
        return None
    return " ".join(lost[:MAX_OFFENDING_WORDS])


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
    if pins.asks and verdict.kept and not any(gives(pins.asks, s.text, months=pins.months) for s in verdict.kept):
        # Each sentence may be true, but none gives what was asked ("how much" answered
        # without an amount): together they do not answer.
        verdict.removed.extend(
            RemovedSentence(text=s.text, reason="asked_figure_missing", offending=pins.asks)
            for s in verdict.kept
        )
        verdict.kept = []
    return verdict


# ------------------------------------------------------------------------- outcomes


def run_evidence(
    request: VerificationRequested, evidence: Mapping[str, EvidenceMessage]
) -> dict[str, EvidenceMessage]:
    """The evidence this run may cite: entries stored under their own ID, of its tenant.

    The searcher writes the hash per run, so this should drop nothing; it is a second
    line against a corrupted or foreign entry ever being cited.
    """
    return {
        key: msg
        for key, msg in evidence.items()
        if key == msg.message_id and msg.tenant_id == request.tenant_id
    }


def _when(msg: EvidenceMessage) -> float:
    if msg.date is None:
        return float("-inf")
    date = msg.date if msg.date.tzinfo else msg.date.replace(tzinfo=UTC)
    return date.timestamp()


def summaries(
    evidence: Mapping[str, EvidenceMessage], cited_first: list[str]
) -> list[EvidenceSummary]:
    """Evidence summaries: cited messages in citation order, then the rest newest first."""
    rest = sorted(
        (m for k, m in evidence.items() if k not in cited_first),
        key=lambda m: (-_when(m), m.message_id),
    )
    ordered = [evidence[k] for k in cited_first if k in evidence] + rest
    return [
        EvidenceSummary.of(m, m.snippet or " ".join(m.body.split())[:SNIPPET_CHARS])
        for m in ordered
    ]


def _searched(trace: Trace) -> list[ToolCall]:
    """What was searched: the trace's own list, else every tool call of its steps."""
    if trace.searched:
        return list(trace.searched)
    calls: list[ToolCall] = []
    seen: set[str] = set()
    for step in trace.steps:
        for outcome in step.tool_calls:
            if outcome.call_id in seen:
                continue
            seen.add(outcome.call_id)
            calls.append(
                ToolCall(call_id=outcome.call_id, tool=outcome.tool, arguments=outcome.arguments)
            )
    return calls


def _safe_verify(
    draft: Draft, evidence: Mapping[str, EvidenceMessage], unsupported_threshold: float, question: str
) -> Verdict:
    """verify(), but a bug in it ends the run without an answer instead of wedging it."""
    try:
        return verify(draft, evidence, unsupported_threshold=unsupported_threshold, question=question)
    except Exception:  # noqa: BLE001 - the run must still finish, unanswered
        log.exception("verification failed; treating the whole draft as malformed")
        text = draft.text or " ".join(s.text for s in draft.sentences or [])
        return Verdict(removed=[RemovedSentence(text=text, reason="malformed")])


def decide_with_verdict(
    request: VerificationRequested,
    evidence: Mapping[str, EvidenceMessage],
    *,
    now: float | None = None,
    unsupported_threshold: float = UNSUPPORTED_THRESHOLD,
) -> tuple[RunResult, Verdict]:
    """The run's result and, for an ``answer`` ending, the verdict behind it.

    ``request`` must have passed :func:`.outcome.checked` against the run's record; the
    result takes from it only what that checked, the verdict and what stored evidence
    confirms (see :mod:`.outcome`)."""
    evidence = run_evidence(request, evidence)
    trace = request.trace.model_copy(deep=True)
    trace.searched = _searched(trace)
    verdict = Verdict()
    answer: Answer | None = None
    hits = []
    finished_at = time.time() if now is None else now

    if request.ending == "answer":
        if request.draft is not None:
            verdict = _safe_verify(request.draft, evidence, unsupported_threshold, request.question)
        answer = verdict.answer()
        trace.removed_sentences.extend(verdict.removed)
        outcome = "answered" if answer is not None else "insufficient_evidence"
    else:
        # The other endings never carry an answer, whatever the message holds.
        outcome = request.ending
        if outcome == "degraded":
            hits = degraded_hits(request.hits, evidence)
    reason = reason_code(
        request, kept=len(verdict.kept), removed=len(verdict.removed), evidence=evidence, finished_at=finished_at
    )

    cited: list[str] = []
    for sentence in answer.sentences if answer else []:
        for citation in sentence.citations:
            if citation.message_id not in cited:
                cited.append(citation.message_id)

    result = RunResult(
        run_id=request.run_id,
        tenant_id=request.tenant_id,
        outcome=outcome,
        question=request.question,
        answer=answer,
        evidence=summaries(evidence, cited),
        hits=hits,
        trace=trace,
        usage=request.usage,
        reason=reason,
        model_note=model_note(request),
        finished_at=finished_at,
    )
    return result, verdict


def decide(
    request: VerificationRequested,
    evidence: Mapping[str, EvidenceMessage],
    *,
    now: float | None = None,
    unsupported_threshold: float = UNSUPPORTED_THRESHOLD,
) -> RunResult:
    """The one result of the run (see the outcome table in DESIGN.md)."""
    return decide_with_verdict(
        request, evidence, now=now, unsupported_threshold=unsupported_threshold
    )[0]
