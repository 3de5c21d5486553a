"""Quoted phrases in an answer sentence.

Double quotes of every kind count: straight ``"…"``, typographic ``“…”``, ``„…“``,
guillemets ``«…»`` and corner brackets ``「…」``/``『…』``. A double quote that is never
closed runs to the end of the sentence: leaving out the closing mark must not let a
phrase escape the check.

Single quotes count only where they cannot be apostrophes:

* typographic ``‘…’`` pairs, where a ``’`` followed by a letter or digit (``don’t``,
  ``’90s``) is an apostrophe and not the closing mark;
* straight ``'…'`` around at least two words, opened at the start of a word and closed
  at the end of one (``'photos received'``; never ``don't`` or ``the drivers' cars``).

An unclosed single quote is not a quote (it is most likely an apostrophe). Single quotes
inside a double-quoted phrase are part of that phrase.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pmsearch.shared.text.normalize import normalize

# Opening mark -> the marks that close it.
DOUBLE_PAIRS: dict[str, str] = {
    '"': '"＂”“',
    "＂": '＂"”“',
    "“": '”"＂“',
    "”": '”"＂',
    "„": '“”"＂',
    "‟": '”"＂',
    "«": "»",
    "»": "«",
    "〝": "〞〟",
    "「": "」",
    "『": "』",
}
_OPENING_CONTEXT = " \t\n([{<—–-/"
_SINGLE_OPENER = re.compile("[‘']")
_EDGE_PUNCT = " .,;:"


@dataclass(frozen=True, slots=True)
class Quote:
    """A quoted phrase: its text as written and its span inside the sentence."""

    text: str
    start: int
    end: int

    def fragments(self) -> list[str]:
        """The normalised pieces that must occur, in order, in one source.

        An ellipsis in a quote marks elided text, so the quote is split there.
        """
        norm = normalize(self.text).replace("[...]", "...").replace("(...)", "...")
        pieces = (piece.strip(_EDGE_PUNCT) for piece in norm.split("..."))
        return [p for p in pieces if any(ch.isalnum() for ch in p)]


_ANY_DOUBLE = re.compile("[" + re.escape("".join(set("".join(DOUBLE_PAIRS) + "".join(DOUBLE_PAIRS.values())))) + "]")


def double_quote_spans(text: str) -> list[tuple[int, int]]:
    """``(open, close)`` positions of double-quoted phrases; close is ``len(text)`` if open."""
    spans: list[tuple[int, int]] = []
    opened = -1
    closers = ""
    for m in _ANY_DOUBLE.finditer(text):
        ch = m.group()
        if opened == -1:
            if ch in DOUBLE_PAIRS:
                opened, closers = m.start(), DOUBLE_PAIRS[ch]
        elif ch in closers:
            spans.append((opened, m.start()))
            opened = -1
    if opened != -1:
        spans.append((opened, len(text)))
    return spans


def _closing(text: str, closer: str, j: int) -> int:
    """Index of the first ``closer`` from ``j`` that ends a word (not an apostrophe)."""
    n = len(text)
    while (j := text.find(closer, j)) != -1:
        if not text[j - 1].isspace() and (j + 1 == n or not text[j + 1].isalnum()):
            return j
        j += 1
    return -1


def _single_quote_spans(text: str, blocked: list[tuple[int, int]]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    n = len(text)
    done = 0
    for m in _SINGLE_OPENER.finditer(text):
        i = m.start()
        if i < done or any(a <= i <= b for a, b in blocked):
            continue
        if not ((i == 0 or text[i - 1] in _OPENING_CONTEXT) and i + 1 < n) or text[i + 1].isspace():
            continue  # not at the start of a word: an apostrophe
        ch = m.group()
        found = _closing(text, "’" if ch == "‘" else "'", i + 1)
        if found == -1:
            continue
        if ch == "'" and len(text[i + 1 : found].split()) < 2:
            continue
        spans.append((i, found))
        done = found + 1
    return spans


def extract_quotes(text: str) -> list[Quote]:
    """Quoted phrases of ``text`` (citation markers already removed), in order."""
    doubles = double_quote_spans(text)
    spans = doubles + _single_quote_spans(text, doubles)
    quotes: list[Quote] = []
    for start, close in sorted(spans):
        inner = text[start + 1 : close]
        if inner.strip():
            quotes.append(Quote(inner.strip(), start + 1, close))
    return quotes
