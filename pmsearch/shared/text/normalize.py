"""Normalisation for quote matching, with a map back to the original text.

Both the model's quote and the stored source are normalised; a quote is found when its
normalised form occurs in the normalised source. The rules:

* HTML character references are decoded (``&amp;`` -> ``&``, ``&#8217;`` -> ``’``);
* each character (with its combining marks) is put in Unicode NFKC and case-folded;
* format characters (zero-width space/joiners, soft hyphen, BOM, bidi controls, ...) and
  variation selectors are dropped;
* every double-quote variant becomes ``"``, every single quote / apostrophe ``'``,
  every dash ``-``, every ellipsis ``...``;
* every white-space character (no-break and other Unicode spaces, line breaks) becomes a
  space, and runs of white space compare equal to one space.

:func:`normalize` gives the canonical form (runs collapsed, ends stripped): that is what
a quote becomes. A source is normalised with :func:`normalize_with_map`, which keeps
every run of spaces (so plain ASCII maps 1:1 and costs one ``str.lower``) and records
which span of the original produced each normalised character; :func:`find_phrase`
then lets one space of the quote match any run of spaces in the source. Excerpts thus
carry offsets into the stored text, and their text is cut from it, never rebuilt.

NFKC is applied per cluster (a base character and the combining marks after it), not to
the whole string, so that the map stays exact.
"""

from __future__ import annotations

import html
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

# Combining marks glue to the character before them (NFKC may compose them).
_MARKS = frozenset(
    ch
    for ch in map(chr, range(0x300, 0x20000))
    if unicodedata.category(ch)[0] == "M"
) | frozenset(map(chr, range(0xE0100, 0xE01F0)))

# Invisible characters that are not category Cf but must still vanish.
_INVISIBLE_EXTRA = frozenset("\u034f\u115f\u1160\u3164\uffa0") | frozenset(
    map(chr, range(0xFE00, 0xFE10))
) | frozenset(map(chr, range(0xE0100, 0xE01F0)))

_DOUBLE = "\"＂“”„‟«»〝〞〟"
_SINGLE = "'＇‘’‚‛‹›`´ʹʻʼʽˈ"
_DASH = "-‐‑‒–—―−⁃﹘﹣－⸺⸻"
_UNIFY: dict[str, str] = {
    **{c: '"' for c in _DOUBLE},
    **{c: "'" for c in _SINGLE},
    **{c: "-" for c in _DASH},
    "…": "...",
    "⋯": "...",
    "᠁": "...",
}

# Anything but printable ASCII and ASCII white space: non-ASCII and control characters,
# "&" (may start an entity) and "`" (a quote variant). Between two of these,
# lower-casing and turning white space into spaces is exactly the normal form and keeps
# the length (a 1:1 map segment).
_SPECIAL = re.compile(r"[^ \t\n\r\f\v!-%'-_a-~]")
_SEPARATORS = str.maketrans("\t\n\r\f\v", "     ")
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_SPACES = re.compile(r" {2,}")


@lru_cache(maxsize=1 << 16)
def fold(cluster: str) -> str:
    """The normal form of one character cluster (may be empty or several characters)."""
    # NFKC again after case folding: folding can produce characters NFKC would change.
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", cluster).casefold())
    out: list[str] = []
    for ch in folded:
        if ch in _INVISIBLE_EXTRA or unicodedata.category(ch) == "Cf":
            continue
        if ch.isspace():
            out.append(" ")
        else:
            out.append(_UNIFY.get(ch, ch))
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Normalized:
    """A normalised text and the piecewise map back to its original.

    Segment ``i`` starts at normalised offset ``norm_starts[i]`` and came from
    ``original[orig_starts[i]:orig_ends[i]]``; a linear segment maps 1:1.
    """

    text: str
    norm_starts: tuple[int, ...]
    orig_starts: tuple[int, ...]
    orig_ends: tuple[int, ...]
    linear: tuple[bool, ...]

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """Original ``[start, end)`` covering normalised ``[start, end)`` (``end > start``)."""
        i = bisect_right(self.norm_starts, start) - 1
        o_start = self.orig_starts[i] + (start - self.norm_starts[i] if self.linear[i] else 0)
        j = bisect_right(self.norm_starts, end - 1) - 1
        if self.linear[j]:
            o_end = self.orig_starts[j] + (end - 1 - self.norm_starts[j]) + 1
        else:
            o_end = self.orig_ends[j]
        return o_start, o_end


class _Builder:
    __slots__ = ("parts", "n_starts", "o_starts", "o_ends", "lin", "pos")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.n_starts: list[int] = []
        self.o_starts: list[int] = []
        self.o_ends: list[int] = []
        self.lin: list[bool] = []
        self.pos = 0

    def add(self, piece: str, o_start: int, o_end: int, linear: bool) -> None:
        if not piece:
            return
        self.parts.append(piece)
        self.n_starts.append(self.pos)
        self.o_starts.append(o_start)
        self.o_ends.append(o_end)
        self.lin.append(linear)
        self.pos += len(piece)

    def gap(self, text: str, start: int, end: int) -> None:
        """Plain ASCII: lower-cased, white space as spaces, mapped 1:1."""
        chunk = text[start:end].lower()
        if not chunk.isprintable():
            chunk = chunk.translate(_SEPARATORS)
        self.add(chunk, start, end, True)

    def finish(self) -> Normalized:
        return Normalized(
            "".join(self.parts),
            tuple(self.n_starts),
            tuple(self.o_starts),
            tuple(self.o_ends),
            tuple(self.lin),
        )


def _prepared(text: str) -> str | None:
    """``text`` lower-cased with separators as spaces, if that keeps every offset.

    Done once for the whole text (a few C-speed passes) so that each plain gap is just a
    slice. ``str.lower`` never shortens a string, so equal length means 1:1.
    """
    low = text.lower()
    if len(low) != len(text):
        return None
    for sep in "\t\n\r\f\v":
        if sep in low:
            low = low.replace(sep, " ")
    return low


def normalize_with_map(text: str) -> Normalized:
    """Normalise ``text`` keeping runs of spaces, with the map back to it."""
    b = _Builder()
    n = len(text)
    low = _prepared(text)
    pos = 0  # text[:pos] is done
    for m in _SPECIAL.finditer(text):
        s = m.start()
        if s < pos:
            continue  # inside an entity or a cluster already handled
        ch = text[s]
        start = s - 1 if s > pos and ch in _MARKS else s  # a mark glues to its base
        if start > pos:
            if low is None:
                b.gap(text, pos, start)
            else:
                b.add(low[pos:start], pos, start, True)
        if ch == "&":
            entity = _ENTITY.match(text, s)
            if entity is not None:
                decoded = html.unescape(entity.group())
                if decoded != entity.group():
                    b.add(fold(decoded), s, entity.end(), False)
                    pos = entity.end()
                    continue
        end = s + 1
        while end < n and text[end] in _MARKS:
            end += 1
        b.add(fold(text[start:end]), start, end, False)
        pos = end
    if pos < n:
        if low is None:
            b.gap(text, pos, n)
        else:
            b.add(low[pos:n], pos, n, True)
    return b.finish()


def collapse(text: str) -> str:
    """Runs of spaces as one space, no space at the ends."""
    return _SPACES.sub(" ", text).strip(" ")


def normalize(text: str) -> str:
    """The canonical normal form of ``text`` (what a quote is compared as)."""
    return collapse(normalize_with_map(text).text)


# Scripts written without spaces between words: no word-boundary check inside them.
_UNSPACED = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified
    (0xF900, 0xFAFF),  # CJK compatibility
    (0xFF66, 0xFF9F),  # half-width Katakana
    (0x20000, 0x3FFFF),  # CJK extensions B+
)


def is_word_char(ch: str) -> bool:
    """A letter or digit of a script that separates words with spaces."""
    if not ch.isalnum():
        return False
    code = ord(ch)
    return code < 0x0E00 or not any(lo <= code <= hi for lo, hi in _UNSPACED)


@lru_cache(maxsize=4096)
def _phrase_pattern(needle: str) -> re.Pattern[str]:
    return re.compile(" +".join(re.escape(word) for word in needle.split(" ")))


def find_phrase(haystack: str, needle: str, start: int = 0) -> tuple[int, int] | None:
    """``[start, end)`` of the first occurrence at or after ``start`` of ``needle`` in
    ``haystack`` as whole words, where a space of ``needle`` matches any run of spaces.

    ``needle`` is in canonical form (:func:`normalize`), ``haystack`` normalised with or
    without collapsed spaces. Whole words so that a quote cannot borrow part of a word:
    "acceptable" is not found inside "unacceptable". None if absent.
    """
    if not needle:
        return None
    check_left = is_word_char(needle[0])
    check_right = is_word_char(needle[-1])
    limit = len(haystack)
    for i, j in _occurrences(haystack, needle, start):
        left_ok = not check_left or i == 0 or not is_word_char(haystack[i - 1])
        right_ok = not check_right or j == limit or not is_word_char(haystack[j])
        if left_ok and right_ok:
            return i, j
    return None


def _occurrences(haystack: str, needle: str, pos: int) -> Iterator[tuple[int, int]]:
    if " " in needle:
        pattern = _phrase_pattern(needle)
        while (m := pattern.search(haystack, pos)) is not None:
            yield m.span()
            pos = m.start() + 1
    else:
        size = len(needle)
        while (i := haystack.find(needle, pos)) != -1:
            yield i, i + size
            pos = i + 1
