"""Sentence alignment: which one or two sentences of a source carry a sentence of an
answer. Deterministic and language-neutral: a source's units (its prose sentences, a
table's rows with their header) are scored by the figures they support and the word
stems they share with the sentence, and the best single unit or pair of neighbouring
units wins. A figure counts more than a word: it is what the sentence is most often
about, and what a wrong sentence most often borrows from elsewhere in the message.
"""

from __future__ import annotations

from dataclasses import dataclass

from pmsearch.shared.text import amounts, figures
from pmsearch.shared.text.normalize import normalize
from pmsearch.shared.text.sentences import unit_spans
from pmsearch.shared.text.words import WORD, stems_of

FIGURE_WEIGHT = 3
# At most this many neighbouring units carry one sentence.
MAX_UNITS = 2


@dataclass(frozen=True, slots=True)
class Unit:
    """One sentence (or table row) of a source text: its span in that text, the figure
    keys it supports and the stems of its words (a row's header's included)."""

    start: int
    end: int
    keys: frozenset[figures.Key]
    stems: frozenset[str]
    # A table row's own cells' stems (its header's left out); None for a prose sentence.
    row: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class Window:
    """The aligned units ``first..last`` (inclusive) of one text, and their score."""

    first: int
    last: int
    score: int


def units(text: str, *, table: bool = False) -> list[Unit]:
    """The units of ``text``: its prose sentences, or with ``table`` (a CSV attachment)
    every line a row; a line with "|" is a row in any text."""
    out = []
    for start, end, header in unit_spans(text, csv=table):
        piece = text[start:end]
        keyed = figures.normalize_figures(piece).text if figures.needs_preparing(piece) else normalize(piece)
        words = WORD.findall(normalize(f"{header} {piece}" if header else piece))
        is_row = table or "|" in piece
        own = stems_of(WORD.findall(normalize(piece))) if is_row else None
        out.append(Unit(start, end, figures.source_keys(keyed) | frozenset(amounts.source_keys(keyed)), stems_of(words), own))
    return out


def best_window(
    text_units: list[Unit], sentence_figures: list[figures.Figure], sentence_stems: frozenset[str]
) -> Window | None:
    """The one unit or the two neighbouring units that share the most with the sentence
    (figures weighing :data:`FIGURE_WEIGHT` words), the earliest and shortest on ties;
    None for a text without units."""
    best: Window | None = None
    for first in range(len(text_units)):
        keys: frozenset[figures.Key] = frozenset()
        stems: frozenset[str] = frozenset()
        for last in range(first, min(first + MAX_UNITS, len(text_units))):
            keys |= text_units[last].keys
            stems |= text_units[last].stems
            found = sum(figures.supported(f, [keys]) for f in sentence_figures)
            score = FIGURE_WEIGHT * found + len(sentence_stems & stems)
            shorter = best is not None and score == best.score and last - first < best.last - best.first
            if best is None or score > best.score or shorter:
                best = Window(first, last, score)
    return best
