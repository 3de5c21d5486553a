"""Normalisation for quote matching, with a map back to the original text.

Both the model's quote and the stored source go through :func:`normalize`; a quote is
found when its normalised form occurs in the normalised source. The rules, in order:

* HTML character references are decoded (``&amp;`` -> ``&``, ``&#8217;`` -> ``’``);
* each character (with its combining marks) is put in Unicode NFKC and case-folded;
* format characters (zero-width space/joiners, soft hyphen, BOM, bidi controls, ...) and
  variation selectors are dropped;
* every double-quote variant becomes ``"``, every single quote / apostrophe ``'``,
  every dash ``-``, every ellipsis ``...``;
* runs of white space (including no-break and other Unicode spaces and line breaks)
  become one space; leading and trailing space is dropped.

NFKC is applied per grapheme-ish cluster (a base character and the combining marks that
follow it) rather than to the whole string, so the result can be mapped back: every
normalised character knows which span of the original produced it. Excerpts therefore
carry offsets into the stored text, and the text they carry is cut from that text, never
rebuilt from the normalised form.

Speed matters (2 KB sources, a 2 ms budget for a whole answer), so runs of plain ASCII
are handled in bulk with one ``str.lower`` and a 1:1 map segment.
"""

from __future__ import annotations

import html
import re
import unicodedata
from bisect import bisect_right
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

# A run of printable ASCII words separated by single spaces, excluding "&" (may start an
# entity) and "`" (a quote variant): lower-casing it is exactly its normal form.
_PLAIN = re.compile(r"[!-%'-_a-~]+(?: [!-%'-_a-~]+)*")
_ASCII_WS = re.compile(r"[ \t\n\r\f\v]+")
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
    __slots__ = ("parts", "n_starts", "o_starts", "o_ends", "lin", "pos", "space")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.n_starts: list[int] = []
        self.o_starts: list[int] = []
        self.o_ends: list[int] = []
        self.lin: list[bool] = []
        self.pos = 0
        self.space = True  # "last emitted was a space": suppresses leading space too

    def add(self, piece: str, o_start: int, o_end: int, linear: bool) -> None:
        self.parts.append(piece)
        self.n_starts.append(self.pos)
        self.o_starts.append(o_start)
        self.o_ends.append(o_end)
        self.lin.append(linear)
        self.pos += len(piece)
        self.space = piece[-1] == " "

    def add_folded(self, piece: str, o_start: int, o_end: int) -> None:
        if not piece:
            return
        if " " in piece:
            piece = _SPACES.sub(" ", piece)
            if self.space:
                piece = piece.lstrip(" ")
                if not piece:
                    return
        self.add(piece, o_start, o_end, False)

    def finish(self) -> Normalized:
        if self.parts and self.space:
            last = self.parts[-1][:-1]
            self.pos -= 1
            if last:
                self.parts[-1] = last
            else:
                for seq in (self.parts, self.n_starts, self.o_starts, self.o_ends, self.lin):
                    seq.pop()
        return Normalized(
            "".join(self.parts),
            tuple(self.n_starts),
            tuple(self.o_starts),
            tuple(self.o_ends),
            tuple(self.lin),
        )


def normalize_with_map(text: str) -> Normalized:
    """Normalise ``text`` and keep the map back to it (see the module docstring)."""
    b = _Builder()
    n = len(text)
    pos = 0
    plain = _PLAIN.match
    while pos < n:
        m = plain(text, pos)
        if m is not None:
            end = m.end()
            if end < n and text[end] in _MARKS:
                # The last character belongs with the mark that follows it.
                end -= 1
                if end > pos and text[end - 1] == " ":
                    end -= 1
            if end > pos:
                b.add(text[pos:end].lower(), pos, end, True)
                pos = end
                continue
        ch = text[pos]
        if ch in " \t\n\r\f\v":
            end = _ASCII_WS.match(text, pos).end()  # type: ignore[union-attr]
            if not b.space:
                b.add(" ", pos, end, False)
            pos = end
            continue
        if ch == "&":
            m = _ENTITY.match(text, pos)
            if m is not None:
                decoded = html.unescape(m.group())
                if decoded != m.group():
                    b.add_folded(fold(decoded), pos, m.end())
                    pos = m.end()
                    continue
        end = pos + 1
        while end < n and text[end] in _MARKS:
            end += 1
        b.add_folded(fold(text[pos:end]), pos, end)
        pos = end
    return b.finish()


def normalize(text: str) -> str:
    """The normalised form of ``text`` alone."""
    return normalize_with_map(text).text


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


def find_phrase(haystack: str, needle: str, start: int = 0) -> int:
    """First index ``>= start`` where ``needle`` occurs in ``haystack`` as whole words.

    Whole words so that a quote cannot borrow part of a word: "acceptable" must not be
    found inside "unacceptable". Both arguments are already normalised. -1 if absent.
    """
    if not needle:
        return -1
    check_left = is_word_char(needle[0])
    check_right = is_word_char(needle[-1])
    size = len(needle)
    limit = len(haystack)
    i = haystack.find(needle, start)
    while i != -1:
        left_ok = not check_left or i == 0 or not is_word_char(haystack[i - 1])
        j = i + size
        right_ok = not check_right or j == limit or not is_word_char(haystack[j])
        if left_ok and right_ok:
            return i
        i = haystack.find(needle, i + 1)
    return -1
