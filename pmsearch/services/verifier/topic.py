"""Is a sentence about what its question asks? What the question pins down (a code, a
version, a name, what a "which" question asks for one of, a month: see
:mod:`.question`) must be named by the sentence's sources, and the question's words a
sentence repeats must not be foreign to them.

The question only ever removes sentences this way, so an attacker who writes it gains
nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from pmsearch.services.verifier.question import IDENTIFIER, Pinned, gives
from pmsearch.services.verifier.sources import Sources

MAX_OFFENDING_WORDS = 5


def off_question(question: Pinned, sources: Sources, cited: list[str], sentence: str) -> str | None:
    """The first thing the question pins down that the sentence's sources never name.

    A code or a version word must be named by a cited message itself; a name or a month
    may also be named by another message of a cited thread (see :mod:`.question`), and a
    name by a message forwarding a cited one, or its thread.
    """
    for code in question.codes:
        if not any(sources[message_id].mentions(code) for message_id in cited):
            return code
    for word in question.versions:
        if not any(sources[message_id].mentions(word) for message_id in cited):
            return word
    # The people a question names may be those a cited message was forwarded to: the
    # hosting offer to Carol answers "which renewal did Frank go for" once she forwards
    # it to him. What it asks about (a garage, a month) must be in the thread.
    named = sources.threads_of(cited, forwards=True) if question.names else []
    for name in question.names:
        if not any(source.names(name) for source in named):
            return name
    which = question.which if question.which and not gives(IDENTIFIER, sentence) else ()
    context = sources.threads_of(cited) if question.months or which else []
    for prefix in which:
        if not any(source.has_prefix(prefix) for source in context):
            return prefix
    for month in question.months:
        if not any(source.in_month(month) for source in context):
            return month
    return None


def off_topic(
    question: Pinned, content: list[tuple[str, str]], sources: Sources, cited: list[str], own_words: bool
) -> str | None:
    """The question's words a sentence repeats but its sources never use, when they are
    most of them (and at least two): the sentence took its subject from the question
    and its facts from a message about something else ("the team offsite costs EUR 685
    per weekly run", cited to a freight quote). A word may come from any message of a
    cited thread. Kept because on recorded drafts it removed answers to questions that
    must not be answered and no right one (evals/rule_counts.py, docs/evaluation.md)."""
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


def borrowed_subject(question: Pinned, content: list[tuple[str, str]], anchors: Iterable[frozenset[str]]) -> str | None:
    """The question's words a sentence repeats, when none of the question's words is
    where its claim comes from: in a cited message's sentences the claim aligns with, its
    subject or its sender (``anchors``, the stems of each). The sentence took its subject
    from the question and its fact from a message about another matter ("the boiler will
    be repaired by Friday", cited to "please settle the invoice by Friday"). One of the
    question's words there is enough: a reply answers in its own words under the thread's
    subject ("delivery expected in June" under "Re: two new boilers"), and "the link is
    ..." needs only the newsletter the question names."""
    repeated = [w for w, st in content if st in question.words]
    if not repeated or any(not anchor.isdisjoint(question.words) for anchor in anchors):
        return None
    return " ".join(repeated[:MAX_OFFENDING_WORDS])
