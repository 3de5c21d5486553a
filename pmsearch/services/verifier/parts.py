"""One searchable part of a message (its body, an attachment, its subject, its patch),
normalised once and cut into word tokens and windows, and the word and excerpt lookups
the verifier's sources make in it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import islice

from pmsearch.shared.attachment_places import place
from pmsearch.shared.messages import Excerpt
from pmsearch.shared.text import figures
from pmsearch.shared.text.normalize import Normalized, find_phrase, normalize, normalize_with_map
from pmsearch.shared.text.words import cached_stem

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
            place=self.place(start),
        )

    def place(self, offset: int) -> str | None:
        """The sheet and row, slide, event or page of an attachment that ``offset`` lies in."""
        return place(self.original, offset) if self.name.startswith("attachment:") else None

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




def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def has_whole_word(text: str, word: str) -> bool:
    """``word`` (made of word characters) occurs in ``text`` as a whole ``\\w+`` token."""
    i = text.find(word)
    if i == -1:
        return False
    end = len(text)
    while i != -1:
        j = i + len(word)
        if (i == 0 or not _is_word(text[i - 1])) and (j == end or not _is_word(text[j])):
            return True
        i = text.find(word, i + 1)
    return False


def starts_word(text: str, prefix: str) -> bool:
    """Whether a word of ``text`` starts with ``prefix``."""
    i = text.find(prefix)
    while i != -1:
        if i == 0 or not _is_word(text[i - 1]):
            return True
        i = text.find(prefix, i + 1)
    return False


def has_stem(text: str, word_stem: str) -> bool:
    """Whether a ``\\w+`` word of normalised ``text`` has the stem ``word_stem``.

    :func:`stem` only strips a suffix, except ``-ies``/``-ied`` becoming ``y``: a word
    with stem ``s`` therefore starts with ``s``, or with ``s[:-1]`` when ``s`` ends in
    ``y``. Only the words starting so are stemmed.
    """
    prefix = word_stem[:-1] if word_stem.endswith("y") else word_stem
    i = text.find(prefix)
    while i != -1:
        if i == 0 or not _is_word(text[i - 1]):
            token = _WORD.match(text, i)
            if token is not None and cached_stem(token.group()) == word_stem:
                return True
        i = text.find(prefix, i + 1)
    return False


def short_norm(text: str) -> str:
    """normalize() of a short header such as the sender, with a fast path for plain ASCII
    (where it is just lower-casing, spacing aside, which word and figure scans ignore)."""
    if text.isascii() and text.isprintable() and "&" not in text and "`" not in text:
        return text.lower()
    return normalize(text)


def passage_of(part: Part, first: int, last: int) -> Excerpt:
    count = len(part.tokens)
    pad = max(3, (PASSAGE_WORDS - (last - first + 1)) // 2)
    first = max(0, first - pad)
    last = min(count - 1, last + pad)
    n_start, n_end = part.token_span(first, last)
    return part.excerpt(n_start, n_end, matched_quote=False)
