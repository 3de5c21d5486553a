"""The verifier's sentence rules: each a function of a sentence's facts
(:class:`~.facts.SentenceFacts`) that returns a :class:`Removal` or None, each with the
one removal reason it gives, in the order :data:`RULES` runs them. A sentence is kept
when no rule removes it; the first rule that does names why.

Adding a rule is: a function here, its rows in ``tests/services/verifier/test_verify_table.py``
(a sentence it removes and one it keeps), and a line in :data:`RULES`. The rules that
judge the whole answer (``answer_removed``, ``asked_figure_missing``) are in
:mod:`.service`, which also documents every rule in its module docstring. A rule stays
only while it pays: on recorded drafts of both evaluation sets' dev halves it removes
more wrong sentences than right ones (``evals/rule_counts.py``; the counts are in
docs/evaluation.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pmsearch.services.verifier.facts import SentenceFacts
from pmsearch.services.verifier.sources import Source
from pmsearch.services.verifier.topic import MAX_OFFENDING_WORDS, borrowed_subject, off_question, off_topic
from pmsearch.shared.messages import RemovalReason
from pmsearch.shared.text.figures import Figure

# Share of a sentence's content words that may be missing from its cited messages before
# it is removed as an unsupported claim (strictly more is removed). Calibrated on the
# labelled set with evals/calibrate_unsupported.py (docs/evaluation.md): a higher share
# let wrong answers through, a lower one began removing right ones.
UNSUPPORTED_THRESHOLD = 0.3
# Sentences with fewer content words are not judged by that count, unless they deny
# something: "No, your mailbox is not full" cited to a message that never mentions a
# mailbox is a negation made up from absence, whatever its length.
MIN_CONTENT_WORDS = 3
# The longest answer sentence kept: far above any sentence a right answer has, far
# below a page.
MAX_SENTENCE_CHARS = 2000


@dataclass(frozen=True)
class Removal:
    reason: RemovalReason
    offending: str | None = None


Rule = Callable[[SentenceFacts, float], Removal | None]


def empty_sentence(f: SentenceFacts, threshold: float) -> Removal | None:
    if not any(ch.isalnum() for ch in f.clean):
        return Removal("empty_sentence")
    return None


def malformed(f: SentenceFacts, threshold: float) -> Removal | None:
    """A citation entry that is no message id, or a sentence a page long: one would be
    copied, with its excerpt, into the result, its events and every client's reply."""
    if f.malformed:
        return Removal("malformed", f.malformed[0])
    if len(f.clean) > MAX_SENTENCE_CHARS:
        return Removal("malformed", f"{len(f.clean)} characters")
    return None


def no_citation(f: SentenceFacts, threshold: float) -> Removal | None:
    return None if f.cited else Removal("no_citation")


def unknown_citation(f: SentenceFacts, threshold: float) -> Removal | None:
    for message_id in f.cited:
        if message_id not in f.sources:
            return Removal("unknown_citation", message_id)
    return None


def off_question_rule(f: SentenceFacts, threshold: float) -> Removal | None:
    """What the question pins down that the sources never name (:func:`.topic.off_question`);
    the question's words the sentence repeats but its sources' threads never use
    (:func:`.topic.off_topic`), or none of which is where its claim comes from
    (:func:`.topic.borrowed_subject`)."""
    offending = off_question(f.question, f.sources, list(f.cited), f.clean) if f.question else None
    if offending is None:
        offending = off_topic(f.question, f.content, f.sources, list(f.cited), f.own_words)
    if offending is None:
        offending = borrowed_subject(f.question, f.content, f.anchors)
    return None if offending is None else Removal("off_question", offending)


def quote_not_found(f: SentenceFacts, threshold: float) -> Removal | None:
    missing = f.quotes.missing
    return None if missing is None else Removal("quote_not_found", missing)


def figure_not_found(f: SentenceFacts, threshold: float) -> Removal | None:
    for figure in f.figures:
        holding = [source for source in f.cited_sources if source.has_figure(figure)]
        if not holding:
            spelled = f.spelled(figure)
            if spelled.casefold() in f.question.quarters:
                continue  # the question's quarter, which its thread names (off_question)
            return Removal("figure_not_found", spelled)
        # A quote is the quote rule's to check; a sentence that says nothing but the
        # figure names no row.
        if not f.quotes.quoted and f.content_stems and off_its_row(figure, holding, f.content_stems):
            return Removal("figure_not_found", f.spelled(figure))
    return None


def off_its_row(figure: Figure, holding: list[Source], claim: frozenset[str]) -> bool:
    """Whether a figure that only table rows of its sources hold stands in none that
    names anything the sentence says (the racking's price given as the forklift's): a
    row is one record, and its figures belong to what its own cells name."""
    rows: list[frozenset[str]] = []
    for source in holding:
        found = source.rows_holding(figure)
        if found is None:
            return False
        rows += found
    return bool(rows) and not any(row & claim for row in rows)


def superseded(f: SentenceFacts, threshold: float) -> Removal | None:
    """What a sentence standing only on messages their senders corrected says that the
    corrections do not (the old link, the old venue)."""
    newer = {f.sources.correction_of(message_id) for message_id in f.cited}
    if None in newer or newer & set(f.cited):
        return None
    corrections = [f.sources[message_id] for message_id in newer if message_id is not None]
    for figure in f.figures:
        if not any(source.has_figure(figure) for source in corrections):
            return Removal("superseded", f.spelled(figure))
    for word, word_stem in f.content:
        if word_stem in f.found and word_stem not in f.question.words and not any(
            source.has_word(word, word_stem) for source in corrections
        ):
            return Removal("superseded", word)
    return None


def unsupported_claim(f: SentenceFacts, threshold: float) -> Removal | None:
    """More than ``threshold`` of its claim's words missing from its cited messages (any
    missing, for a denial), once it is long enough to count."""
    if not f.translated and (len(f.content) >= MIN_CONTENT_WORDS or (f.negated and f.content)):
        missing = f.unfound
        if (f.negated and missing) or (f.claim and len(missing) / len(f.claim) > threshold):
            return Removal("unsupported_claim", " ".join(missing[:MAX_OFFENDING_WORDS]))
    return None


# The one reason each rule gives.
REASON_OF: dict[Rule, RemovalReason] = {
    empty_sentence: "empty_sentence",
    malformed: "malformed",
    no_citation: "no_citation",
    unknown_citation: "unknown_citation",
    off_question_rule: "off_question",
    quote_not_found: "quote_not_found",
    figure_not_found: "figure_not_found",
    superseded: "superseded",
    unsupported_claim: "unsupported_claim",
}

RULES: tuple[Rule, ...] = (
    empty_sentence,
    malformed,
    no_citation,
    unknown_citation,
    off_question_rule,
    quote_not_found,
    figure_not_found,
    superseded,
    unsupported_claim,
)


def first_removal(f: SentenceFacts, threshold: float = UNSUPPORTED_THRESHOLD) -> Removal | None:
    """Why the sentence goes (the first rule that removes it), or None when it stays."""
    for rule in RULES:
        removal = rule(f, threshold)
        if removal is not None:
            assert removal.reason == REASON_OF[rule], rule.__name__  # one reason per rule
            return removal
    return None
