"""The verifier's own deterministic sentence splitter.

The model's segmentation is not trusted: a sentence is what this splitter says it is, and
each one must stand on its own citations. Over-splitting only costs a removed fragment;
under-splitting could let an uncited claim ride along with a cited one, so where the two
conflict the rules lean towards splitting, except for the constructs below.

Rules:

* Blocks: a blank line ends a block; each bullet or numbered list item (``-``, ``*``,
  ``•``, ``1.``, ``2)``, ``a)``, ``(3)``) and each Markdown heading is its own block, its
  marker dropped. A single line break inside a block is a soft wrap, not a boundary.
* Inside a block a boundary follows ``.``, ``!``, ``?``, ``…`` (runs such as ``?!`` or
  ``...`` count once), plus any closing quotes or brackets right after them, when white
  space follows and the next character is not a lower-case letter. ``。！？`` need no
  white space.
* No boundary without white space after the stop, so decimals and amounts (``3.5``,
  ``€1,200.50``), times (``10:30``), dates (``29.11.2025``), URLs and e-mail addresses stay
  whole. A lower-case continuation is not a new sentence (``10:30 a.m. on Monday``,
  ``he waited... and left``, ``"Done?" she asked``).
* After a known abbreviation (``Mr.``, ``Dr.``, ``e.g.``, ``i.e.``, ``vs.``, ``approx.``, ...)
  or a single initial (``J. Smith``) there is no boundary; after ``No.``, ``p.``,
  ``Nov.`` and the like only when no digit follows. Words that often end a sentence
  (``etc.``, ``Inc.``, ``a.m.``) follow the general rule.
* A stop inside a closed double-quoted phrase is not a boundary unless the quote closes
  right after it, so a quote is never cut in two (its check would be lost).
* Citation markers right after a stop (``... done. [m1] Next``) belong to the sentence
  before; a sentence made only of markers joins the sentence before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pmsearch.shared.attachment_places import row_mark_number
from pmsearch.shared.text.calendar import MONTH_ABBREVIATIONS
from pmsearch.shared.text.citations import Marker, find_markers
from pmsearch.shared.text.quotes import double_quote_spans

_LIST_ITEM = re.compile(
    r"[ \t]*(?:[-*+•‣◦▪–—]|\d{1,3}[.)]|[a-z]\)|\(\d{1,3}\)|\([a-z]\)|#{1,6})[ \t]+(?=\S)"
)
_TERMINATOR = re.compile(r"[.!?…。！？‼⁇⁈⁉]+")
_CLOSERS = frozenset("\"'”’»›)]}」』〞〟＂＇")
_OPENERS = "([{\"'“‘«„¿¡"
_SPACES = re.compile(r"\s+")
_LAST_WORD = re.compile(r"\S*\Z")

_ALWAYS_ABBREV = frozenset(
    """mr mrs ms mx dr prof rev hon gen col capt lt sgt st mt ft vs v cf e.g i.e eg ie
    approx ca cca fig figs eq viz resp incl excl dept univ bros tel ext attn z.b d.h bzw
    ggf vgl""".split()
)
_NUMERIC_ABBREV = frozenset(
    "no nos nr art sec ch chap vol p pp para".split() + [a for a, _ in MONTH_ABBREVIATIONS["en"]]
)


@dataclass(frozen=True, slots=True)
class Sentence:
    """A sentence's span in the split text and its text with white space collapsed."""

    start: int
    end: int
    text: str


def _blocks(text: str) -> list[tuple[int, int]]:
    blocks: list[tuple[int, int]] = []
    current: list[int] | None = None
    offset = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e")
        start, end = offset, offset + len(body)
        offset += len(line)
        if not body.strip():
            current = None
            continue
        item = _LIST_ITEM.match(body)
        if item is not None:
            current = [start + item.end(), end]
            blocks.append((current[0], current[1]))
            if item.group().strip().startswith("#"):
                current = None  # a heading never continues on the next line
            continue
        if current is None:
            current = [start + len(body) - len(body.lstrip()), end]
            blocks.append((current[0], current[1]))
        else:
            current[1] = end
            blocks[-1] = (current[0], end)
    return blocks


def _word_before(block: str, i: int) -> str:
    # Abbreviations are short: looking 40 characters back is plenty.
    tail = _LAST_WORD.search(block, max(0, i - 40), i)
    return (tail.group() if tail else "").lstrip(_OPENERS)


def _abbreviation_blocks(block: str, i: int, nxt: str) -> bool:
    """True when the full stop at ``i`` ends an abbreviation, not the sentence."""
    word = _word_before(block, i)
    lower = word.lower()
    if lower in _ALWAYS_ABBREV:
        return True
    if lower in _NUMERIC_ABBREV and nxt.isdigit():
        return True
    return len(word) == 1 and word.isalpha() and word.isupper() and word != "I"


def _boundaries(block: str, markers: list[Marker]) -> list[int]:
    n = len(block)
    marker_at = {m.start: m for m in markers}
    in_marker = {i for m in markers for i in range(m.start, m.end)}
    quotes = [(a, b) for a, b in double_quote_spans(block) if b < n]
    cuts: list[int] = []
    for term in _TERMINATOR.finditer(block):
        i, j = term.span()
        if i in in_marker:
            continue  # a stop inside an ID
        k = j
        while k < n and block[k] in _CLOSERS:
            k += 1
        if any(a < i < b and k <= b for a, b in quotes):
            continue  # inside a quoted phrase that does not close here
        t = k
        while t < n and block[t].isspace():
            t += 1
        if t >= n:
            continue  # the block's end is a boundary anyway
        run = term.group()
        if run == "." and _abbreviation_blocks(block, i, block[t]):
            continue
        marker = marker_at.get(t)
        if marker is not None:
            cuts.append(marker.end)
            continue
        unspaced = run[-1] in "。！？"
        if t == k and not unspaced:
            continue  # "3.5", "a.b@example.com", "example.com/x"
        if block[t].islower():
            continue
        cuts.append(k)
    return cuts


def split_sentences(text: str) -> list[Sentence]:
    """The sentences of ``text``, in order, each with its span and collapsed text."""
    sentences: list[Sentence] = []
    for b_start, b_end in _blocks(text):
        block = text[b_start:b_end]
        markers = find_markers(block)
        previous = 0
        for cut in [*_boundaries(block, markers), len(block)]:
            if cut <= previous:
                continue
            raw = block[previous:cut]
            lead = len(raw) - len(raw.lstrip())
            raw = raw.strip()
            start = b_start + previous + lead
            previous = cut
            if not raw:
                continue
            sentence = Sentence(start, start + len(raw), _SPACES.sub(" ", raw))
            if sentences and raw[0] == "[" and _only_markers(raw):
                last = sentences.pop()
                sentence = Sentence(last.start, sentence.end, f"{last.text} {sentence.text}")
            sentences.append(sentence)
    return sentences


def _only_markers(raw: str) -> bool:
    markers = find_markers(raw)
    if not markers:
        return False
    rest = raw[: markers[0].start] + "".join(
        raw[a.end : b.start] for a, b in zip(markers, markers[1:])
    ) + raw[markers[-1].end :]
    return not any(ch.isalnum() for ch in rest)


# ---------------------------------------------------------------- the mail's own sentences

# A sentence of mail ends at ".", "!" or "?" before a space (not inside "1,520.00"), or a line.
_MAIL_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# A line that starts a list item ("- Forklift training certificates renewed", "2) ...").
_ITEM = r"[ \t]*(?:[-*•–]|\d{1,2}[.)])[ \t]"


def prose_sentences(text: str) -> list[str]:
    """The sentences of mail prose (see :func:`prose_sentence_spans`), a wrapped line
    joined to the next."""
    return [text[start:end].replace("\n", " ") for start, end in prose_sentence_spans(text)]


def table_sentences(name: str, text: str) -> list[str]:
    """The sentences of an attachment called ``name``: its prose's, and each row of a
    table (a line with "|", or any line of a CSV file) after its header row and an
    ellipsis ("KPI | March | February ... On-time delivery | 94.1% | 95.6%"): a figure in
    a table means nothing without its column."""
    csv = name.casefold().endswith((".csv", ".tsv"))
    return [
        f"{header} ... {text[start:end]}" if header else text[start:end].replace("\n", " ")
        for start, end, header in unit_spans(text, csv=csv)
    ]


def prose_sentence_spans(text: str, offset: int = 0) -> list[tuple[int, int]]:
    """The ``[start, end)`` of each sentence of mail prose in ``text`` (shifted by
    ``offset``). A wrapped line goes on with the next; a blank line, a sentence end or a
    list item stops it: each item of a list states its own thing ("- Forklift training
    certificates renewed" / "- Two new pickers start Monday" is not one sentence).
    Joining a wrapped line changes no character's place."""
    joined = re.sub(rf"(?<![.!?:\n])\n(?!\n|{_ITEM})", " ", text)
    spans, start = [], 0
    for end_match in [*_MAIL_SENTENCE_END.finditer(joined), None]:
        end = len(joined) if end_match is None else end_match.start()
        piece = joined[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            spans.append((offset + start + lead, offset + start + len(piece.rstrip())))
        if end_match is not None:
            start = end_match.end()
    return spans


def unit_spans(text: str, *, csv: bool = False) -> list[tuple[int, int, str]]:
    """(start, end, header) of each unit of ``text``: a prose sentence (header "") or a
    table row (a line with "|", or with ``csv`` any line), whose header is the table's
    first row (the first row's own is ""). A sheet's row mark is neither."""
    units: list[tuple[int, int, str]] = []
    header: str | None = None
    prose_start = 0
    pos = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        # A sheet's row mark (the row's number where empty rows were left out) is its
        # place, not a sentence, and the table goes on under its header.
        mark = row_mark_number(body) is not None
        if mark or (csv and body.strip()) or "|" in body:
            units.extend((s, e, "") for s, e in prose_sentence_spans(text[prose_start:pos], prose_start))
            if not mark:
                lead = len(body) - len(body.lstrip())
                units.append((pos + lead, pos + len(body.rstrip()), header or ""))
                header = body.strip() if header is None else header
            prose_start = pos + len(line)
        else:
            header = None
        pos += len(line)
    units.extend((s, e, "") for s, e in prose_sentence_spans(text[prose_start:], prose_start))
    return units
