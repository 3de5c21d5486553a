"""Is a sentence about what its question asks? What the question pins down must be
named by the sentence's sources, and the question's words a sentence repeats must not
be foreign to them (see :mod:`.question` for what is pinned, and rule 8 of
:mod:`.service`).

The question only ever removes sentences this way, so an attacker who writes it gains
nothing.
"""

from __future__ import annotations

from services.verifier.question import IDENTIFIER, Pinned, gives, week_names
from services.verifier.sources import Source, Sources
from shared.text.words import cached_stem

MAX_OFFENDING_WORDS = 5


def off_question(question: Pinned, sources: Sources, cited: list[str], sentence: str) -> str | None:
    """The first thing the question pins down that the sentence's sources never name.

    A code or a numbered week must be named by a cited message itself; a name, month or
    quarter may also be named by another message of a cited thread (see :mod:`.question`),
    and a name by a message forwarding a cited one, or its thread.
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
    # The people a question names may be those a cited message was forwarded to: the
    # hosting offer to Carol answers "which renewal did Frank go for" once she forwards
    # it to him. What the question asks about (a garage, a month) must be in the thread.
    named = sources.threads_of(cited, forwards=True) if question.names else []
    for name in question.names:
        if not any(source.names(name) for source in named):
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


def off_topic(
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
