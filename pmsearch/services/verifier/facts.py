"""What one draft sentence says and what its cited sources hold of it: built once per
sentence, read by every rule (:mod:`.rules`).

Each fact is computed the first time a rule reads it, so a sentence removed by an early
rule (no citation, an unknown one) never pays for the figure and word analysis.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from pmsearch.services.verifier.question import AMOUNT, WHEN, Pinned, gives, gives_contact
from pmsearch.services.verifier.sources import Aligned, Source, Sources
from pmsearch.services.verifier.support import (
    CONTACT_WORDS,
    PRICE_WORDS,
    WHEN_WORDS,
    blank_figures,
    content_words,
)
from pmsearch.shared.messages import Citation
from pmsearch.shared.text.amounts import as_amount
from pmsearch.shared.text.figures import Figure, normalize_figures, sentence_figures
from pmsearch.shared.text.normalize import Normalized
from pmsearch.shared.text.quotes import extract_quotes
from pmsearch.shared.text.words import in_english

_WORD = re.compile(r"\w+")
_NEGATION = re.compile(r"\b(?:no|not|never|none|nothing|cannot)\b|n't\b", re.I)
_LEADING_NO = re.compile(r"\A\W*no\b[,.!:;]?", re.I)

Word = tuple[str, str]  # a content word as written (normalised) and its stem


@dataclass(frozen=True)
class QuoteCheck:
    """The sentence's quotes against its cited messages: the first one none of them holds
    (``missing``), the words of those found, and per message the excerpt of the first
    quote it holds."""

    missing: str | None
    quoted: tuple[str, ...]
    excerpts: dict[str, Citation]


@dataclass(frozen=True)
class SentenceFacts:
    """One sentence of a draft: ``clean`` is its text without citation markers, ``cited``
    the messages it cites (inherited ones first), ``malformed`` its citation entries that
    are not message ids."""

    raw: str
    clean: str
    cited: tuple[str, ...]
    malformed: tuple[str, ...]
    sources: Sources
    question: Pinned

    # ------------------------------------------------------------ the sentence alone

    @cached_property
    def norm(self) -> Normalized:
        return normalize_figures(self.clean)

    @cached_property
    def scanned(self) -> tuple[str, list[Figure]]:
        """The normalised text and its figures as written, for :func:`.question.gives`."""
        return self.norm.text, sentence_figures(self.norm, self.clean)

    @cached_property
    def figures(self) -> list[Figure]:
        """Its figures, amounts read with their currency and scale."""
        return [as_amount(f, self.norm.text) for f in self.scanned[1]]

    @cached_property
    def content(self) -> list[Word]:
        """Its content words, figures left out."""
        return content_words(blank_figures(self.norm.text, self.figures))

    @cached_property
    def negated(self) -> bool:
        """Whether it denies something. A bare "No," before an answer to a question that
        is not yes/no ("No, the dentist's appointment is on Monday, 29 April" for "when
        is my dentist appointment?") denies nothing: the small model's habit, not a claim."""
        denial = self.clean if self.question.polar else _LEADING_NO.sub("", self.clean)
        return _NEGATION.search(denial) is not None

    def spelled(self, figure: Figure) -> str:
        """The figure as the sentence writes it."""
        start, end = self.norm.source_span(figure.start, figure.end)
        return self.clean[start:end]

    # ------------------------------------------------------------ against its sources

    @cached_property
    def cited_sources(self) -> list[Source]:
        return [self.sources[message_id] for message_id in self.cited]

    @cached_property
    def content_stems(self) -> frozenset[str]:
        return frozenset(word_stem for _, word_stem in self.content)

    @cached_property
    def aligned(self) -> list[Aligned]:
        """Per cited message, the one or two of its sentences that carry this one."""
        return [source.aligned(self.figures, self.content_stems) for source in self.cited_sources]

    @cached_property
    def anchors(self) -> list[frozenset[str]]:
        """Per cited message, the stems of the sentences its claim comes from (aligned on
        the claim, not on the question's words it restates), of its subject and of its
        sender: where the question's matter must be named."""
        claim = frozenset(word_stem for _, word_stem in self.claim)
        return [source.aligned(self.figures, claim).word_stems | source.heading_stems for source in self.cited_sources]

    @cached_property
    def quotes(self) -> QuoteCheck:
        excerpts: dict[str, Citation] = {}
        quoted: list[str] = []
        for quote in extract_quotes(self.clean):
            fragments = quote.fragments()
            if not fragments:
                continue  # punctuation or an ellipsis alone: nothing to check
            quoted.extend(fragments)
            found = False
            for message_id in self.cited:
                excerpt = self.sources[message_id].find_quote(fragments)
                if excerpt is not None:
                    found = True
                    excerpts.setdefault(message_id, Citation(message_id=message_id, excerpt=excerpt))
            if not found:
                return QuoteCheck(quote.text, tuple(quoted), excerpts)
        return QuoteCheck(None, tuple(quoted), excerpts)

    @cached_property
    def in_quotes(self) -> frozenset[str]:
        """The words of its verified quotes: each occurs, as a whole word, in a cited message."""
        quoted = self.quotes.quoted
        return frozenset(_WORD.findall(" ".join(quoted))) if quoted else frozenset()

    @cached_property
    def found(self) -> frozenset[str]:
        """The stems of its content words that a cited message holds."""
        return frozenset(
            word_stem for word, word_stem in self.content
            if word in self.in_quotes or any(source.has_word(word, word_stem) for source in self.cited_sources)
        )

    @cached_property
    def own_words(self) -> bool:
        """Whether it has a word of its own (not the question's) that a cited message
        states: a name that is only a cited message's sender or signature ("Priya Nair
        presents first", cited to Priya's mail about the review's date) adds nothing."""
        return any(
            st in self.found and st not in self.question.words
            and (w in self.in_quotes or any(source.states(w, st) for source in self.cited_sources))
            for w, st in self.content
        )

    @cached_property
    def adds(self) -> bool:
        """Whether it says something its sources hold beyond the question's words."""
        return bool(self.figures) or self.own_words

    @cached_property
    def claim(self) -> list[Word]:
        """The content words its sources must hold. An answer restates its question ("the
        new forklifts will arrive in mid-June"): the question's words are its subject, not
        its claim, once the sentence adds something its sources hold. A denial, a sentence
        that adds nothing, and any answer to a yes/no question ("Yes, Sabine Roth asked for
        new bank details") are checked whole. With figures, words that only say what kind
        they are ("costs", "phone") are not the claim either."""
        question, content = self.question, self.content
        restating = self.adds and not self.negated and not question.polar
        claim = [(w, st) for w, st in content if st not in question.words] if restating else content
        if restating and question.asks == WHEN and gives(WHEN, self.clean, self.scanned):
            claim = [(w, st) for w, st in claim if st not in WHEN_WORDS]
        if self.figures and not self.negated:
            if gives_contact(self.clean, self.scanned):
                claim = [(w, st) for w, st in claim if st not in CONTACT_WORDS]
            if gives(AMOUNT, self.clean, self.scanned):
                claim = [(w, st) for w, st in claim if st not in PRICE_WORDS]
        return claim

    @cached_property
    def unfound(self) -> list[str]:
        """The words of its claim (:attr:`claim`) that no cited message holds."""
        return [word for word, word_stem in self.claim if word_stem not in self.found]

    @cached_property
    def translated(self) -> bool:
        """An English sentence with figures, standing on mail in another language ("at
        the office at 12 Rue de Gerland" for "dans nos bureaux au 12 rue de Gerland"):
        it shares their names and figures, not their words."""
        return (
            bool(self.figures) and not self.negated and in_english(self.clean)
            and not any(source.english for source in self.cited_sources)
        )
