"""Which sentences of a run's evidence bear on the question: the reader of the passages.

A passage shows the sentences of a message that answer, not a fixed piece of it: the
sender's own sentences (never quoted text, attribution lines, signatures, footers or
diffstats: :func:`pmsearch.shared.text.mail.own_text`), each scored by the question's
words it shares, weighted by how rare each word is among the evidence's sentences. A
word every found message holds (the list's name, the project's) picks no sentence out;
the asked code or the one word only the answering sentence shares does.

The reader is blind to the language on purpose: words are cut to a five-letter prefix
(:func:`pmsearch.shared.text.words.prefix_stems`), and the function words of English,
French and German weigh nothing, so a French question meets a French sentence the way an
English one meets English.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from stop_words import get_stop_words

from pmsearch.shared.text.mail import own_text
from pmsearch.shared.text.question import CODE
from pmsearch.shared.text.words import prefix_stems
from pmsearch.shared.textcache import cached_text

# The mail of this service is asked about in these; each list is a few hundred words.
LANGUAGES = ("english", "french", "german")
# An asked code (an invoice number, a ticket) names the one message about it: it counts
# as this many rare words.
CODE_WEIGHT = 3.0


@lru_cache(maxsize=1)
def function_words() -> frozenset[str]:
    """The function words of :data:`LANGUAGES`, cut like :func:`prefix_stems` cuts."""
    words: set[str] = set()
    for language in LANGUAGES:
        words.update(w.casefold()[:5] for w in get_stop_words(language) if len(w) > 2)
    return frozenset(words)


def terms(text: str) -> frozenset[str]:
    """The words of ``text`` that can pick a sentence out: prefix stems without function
    words, each code (INV-2024-0173) kept whole besides (cut at its hyphens, every
    invoice of a year would share "inv" and "2024")."""
    return _terms(text)


# Sentences repeat across calls, and the verifier reads whole messages' own words: the
# project's text cache bounds what it keeps by length, where lru_cache would keep any.
@cached_text(maxsize=16384)
def _terms(text: str) -> frozenset[str]:
    codes = {m.group().casefold() for m in CODE.finditer(text)}
    words = prefix_stems(CODE.sub(" ", text) if codes else text) - function_words()
    return frozenset(words | codes)


# A quote whose words another message's own words hold this share of quotes that
# message: its original is in view.
HELD_SHARE = 0.9


def own_terms(bodies: Mapping[str, str]) -> dict[str, frozenset[str]]:
    """The terms of each message's own words (:func:`pmsearch.shared.text.mail.own_text`),
    by message id: what :func:`held` weighs a quote against, the same for the passages
    that show quotes and the verifier that accepts them."""
    return {mid: terms(own_text(body)) for mid, body in bodies.items()}


def held(quote: frozenset[str], others: Iterable[frozenset[str]]) -> bool:
    """Whether one of ``others`` (the terms of other messages' own words) holds most of
    ``quote``'s terms: the quoted original is in view and speaks for itself, under its
    own sender; a quote held by none is the only copy of what it says."""
    need = HELD_SHARE * len(quote)
    return not quote or any(len(quote & other) >= need for other in others)


@dataclass(frozen=True)
class Weights:
    """How much each of the question's words says, among the sentences at hand."""

    weight: dict[str, float]

    @classmethod
    def of(cls, question: str, units: Iterable[frozenset[str]]) -> Weights:
        """Inverse sentence frequency of each question word over ``units`` (the term
        sets of every sentence of the evidence)."""
        asked = terms(question)
        counts: Counter[str] = Counter()
        n = 0
        for unit in units:
            n += 1
            counts.update(asked & unit)
        weight = {}
        for t in asked:
            idf = math.log(1 + (n + 1) / (1 + counts[t]))
            weight[t] = idf * (CODE_WEIGHT if CODE.fullmatch(t) else 1.0)
        return cls(weight)

    def score(self, unit: frozenset[str]) -> float:
        return sum(w for t, w in self.weight.items() if t in unit)

    def without(self, words: frozenset[str]) -> Weights:
        """These weights less ``words`` (a sender's name, say)."""
        return Weights({t: w for t, w in self.weight.items() if t not in words}) if words & self.weight.keys() else self
