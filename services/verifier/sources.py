"""The run's stored evidence, prepared for matching: each part of each message normalised
once (lazily, only when a sentence cites the message) and cut into word tokens.

A message has searchable parts: its body (``part="body"``), each attachment's text
(``"attachment:<name>"``) and its subject (``"subject"``), in that order of preference.

For the figures and the unsupported-content checks each message also gets, once and
only when a sentence needs them, the keys of its figures and the stems of its words:
those of its parts plus its sender and (figures only) its date, which a sentence may
fairly state ("Anna wrote on 29 November ...").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import islice

from shared.messages import EvidenceMessage, Excerpt
from services.verifier import figures
from services.verifier.normalize import Normalized, find_phrase, normalize, normalize_with_map
from services.verifier.support import stems_of

_WORD = re.compile(r"\w+")
# Passages are about PASSAGE_WORDS words. The best one is sought among windows of WINDOW
# words starting every STRIDE words, scored by distinct words shared with the sentence:
# set intersections in C rather than a Python loop over every word of the source.
PASSAGE_WORDS = 24
WINDOW = 40
STRIDE = 20


@dataclass(slots=True)
class Part:
    name: str
    original: str
    _norm: Normalized | None = None
    _tokens: list[str] | None = None
    _windows: list[tuple[int, frozenset[str]]] | None = None

    @property
    def figure_text(self) -> str:
        """The normalised text figures are read from (digit groups split by a thin or
        no-break space read as one number: that needs a normalisation of its own)."""
        if figures.needs_preparing(self.original):
            return figures.normalize_figures(self.original).text
        return self.norm.text

    @property
    def norm(self) -> Normalized:
        if self._norm is None:
            self._norm = normalize_with_map(self.original)
        return self._norm

    @property
    def tokens(self) -> list[str]:
        if self._tokens is None:
            self._tokens = _WORD.findall(self.norm.text)
        return self._tokens

    @property
    def windows(self) -> list[tuple[int, frozenset[str]]]:
        """(first token, distinct words) of each window of the part."""
        if self._windows is None:
            tokens = self.tokens
            self._windows = [
                (i, frozenset(tokens[i : i + WINDOW]))
                for i in range(0, max(1, len(tokens) - WINDOW + STRIDE), STRIDE)
            ]
        return self._windows

    def token_span(self, first: int, last: int) -> tuple[int, int]:
        """Normalised ``[start, end)`` of tokens ``first..last`` inclusive."""
        # islice skips the earlier matches in C; only two match objects are kept.
        matches = list(islice(_WORD.finditer(self.norm.text), first, last + 1))
        return matches[0].start(), matches[-1].end()

    def excerpt(self, n_start: int, n_end: int, matched_quote: bool) -> Excerpt:
        """The original text behind normalised ``[n_start, n_end)``, copied verbatim."""
        start, end = self.norm.source_span(n_start, n_end)
        return Excerpt(
            text=self.original[start:end],
            part=self.name,
            start=start,
            end=end,
            matched_quote=matched_quote,
        )

    def find(self, fragments: list[str]) -> tuple[int, int] | None:
        """Normalised span holding all ``fragments`` in order, whole words, or None."""
        text = self.norm.text
        pos = 0
        first = -1
        for fragment in fragments:
            span = find_phrase(text, fragment, pos)
            if span is None:
                return None
            if first == -1:
                first = span[0]
            pos = span[1]
        return (first, pos) if first != -1 else None


@dataclass(slots=True)
class Source:
    message: EvidenceMessage
    parts: list[Part] = field(default_factory=list)
    _figure_keys: frozenset[figures.Key] | None = None
    _stems: frozenset[str] | None = None

    @property
    def figure_keys(self) -> frozenset[figures.Key]:
        """Keys of every figure of the message's parts, sender and date."""
        if self._figure_keys is None:
            keys: set[figures.Key] = set()
            for part in self.parts:
                keys.update(figures.source_keys(part.figure_text))
            keys.update(figures.source_keys(normalize(self.message.sender)))
            date = self.message.date
            if date is not None:
                keys.update(figures.date_keys(date.day, date.month, date.year))
            self._figure_keys = frozenset(keys)
        return self._figure_keys

    @property
    def stems(self) -> frozenset[str]:
        """Stems of every word of the message's parts and sender."""
        if self._stems is None:
            stems: set[str] = set()
            for part in self.parts:
                stems.update(stems_of(part.tokens))
            stems.update(stems_of(_WORD.findall(normalize(self.message.sender))))
            self._stems = frozenset(stems)
        return self._stems

    @classmethod
    def of(cls, message: EvidenceMessage) -> Source:
        parts = [Part("body", message.body)]
        parts.extend(Part(f"attachment:{a.name}", a.text) for a in message.attachments)
        parts.append(Part("subject", message.subject))
        return cls(message, parts)

    def find_quote(self, fragments: list[str]) -> Excerpt | None:
        for part in self.parts:
            span = part.find(fragments)
            if span is not None:
                return part.excerpt(span[0], span[1], matched_quote=True)
        return None

    def best_passage(self, words: frozenset[str]) -> Excerpt:
        """The passage sharing the most distinct words with the sentence (earliest on ties).

        With no word in common, the start of the first non-empty part.
        """
        best: tuple[int, Part, int] | None = None
        if words:
            for part in self.parts:
                for first, window in part.windows:
                    score = len(words & window)
                    if score and (best is None or score > best[0]):
                        best = (score, part, first)
        if best is None:
            for part in self.parts:
                if part.tokens:
                    return _passage(part, 0, 0)
            return Excerpt(text="", part="body", start=0, end=0, matched_quote=False)
        _, part, first = best
        tokens = part.tokens
        hits = [i for i in range(first, min(first + WINDOW, len(tokens))) if tokens[i] in words]
        return _passage(part, hits[0], hits[-1])


def _passage(part: Part, first: int, last: int) -> Excerpt:
    count = len(part.tokens)
    pad = max(3, (PASSAGE_WORDS - (last - first + 1)) // 2)
    first = max(0, first - pad)
    last = min(count - 1, last + pad)
    n_start, n_end = part.token_span(first, last)
    return part.excerpt(n_start, n_end, matched_quote=False)


class Sources:
    """Lazily prepared sources, keyed by message ID."""

    def __init__(self, evidence: Mapping[str, EvidenceMessage]) -> None:
        self._evidence = evidence
        self._ready: dict[str, Source] = {}

    def __contains__(self, message_id: str) -> bool:
        return message_id in self._evidence

    def __getitem__(self, message_id: str) -> Source:
        source = self._ready.get(message_id)
        if source is None:
            source = self._ready[message_id] = Source.of(self._evidence[message_id])
        return source
