"""Citation markers in answer text.

The one documented format is a message ID in square brackets right after the claim:
``The insurer accepted the claim [m3f9a2c1b0d4e].`` Also accepted, because models write
them: several IDs in one bracket separated by commas or semicolons
(``[m3f9a2c1b0d4e, m0a1b2c3d4e5f]``, ``[id1; id2]``) and adjacent brackets
(``[id1][id2]``, ``[id1] [id2]``).

Message IDs are ``m`` + 12 lowercase hex digits. Other tokens made of
``A-Za-z0-9._:@<>-`` are accepted as IDs too (and then simply fail as unknown when the
run's evidence does not hold them), but only when they cannot be prose: a token counts
as an ID when it has the canonical shape (in any letter case), or contains a digit or an
``@`` (``[1]``, ``[msg-42]``, ``[<a@b.example>]``). So ``[sic]``, ``[etc.]``,
``[see below]`` and Markdown links ``[text](url)`` stay in the text as prose. A bracket
where any token is prose is prose as a whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = r"[A-Za-z0-9._:@<>-]+"
_BRACKET = rf"\[[ \t]*{_TOKEN}(?:[ \t]*[,;][ \t]*{_TOKEN})*[ \t]*\](?!\()"
_BRACKET_RE = re.compile(_BRACKET)
_TOKEN_RE = re.compile(_TOKEN)
_FULL_TOKEN_RE = re.compile(rf"{_TOKEN}\Z")
CANONICAL_ID = re.compile(r"m[0-9a-f]{12}\Z")
_CANONICAL_ANY_CASE = re.compile(r"[mM][0-9a-fA-F]{12}\Z")
_PUNCT_AFTER = frozenset(".,;:!?…)]}»”’\"'。！？、")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Marker:
    """One run of adjacent citation brackets and the IDs it names, in order."""

    start: int
    end: int
    ids: tuple[str, ...]


def canonical(token: str) -> str:
    """IDs in the canonical shape are compared in lower case; others exactly."""
    return token.lower() if _CANONICAL_ANY_CASE.match(token) else token


def _is_id(token: str) -> bool:
    return bool(_CANONICAL_ANY_CASE.match(token)) or any(c.isdigit() or c == "@" for c in token)


def _bracket_ids(bracket: str) -> tuple[str, ...] | None:
    tokens = _TOKEN_RE.findall(bracket[1:-1])
    if not tokens or not all(_is_id(t) for t in tokens):
        return None
    return tuple(canonical(t) for t in tokens)


def find_markers(text: str) -> list[Marker]:
    """Citation marker runs in ``text``; adjacent brackets (white space between) merge."""
    markers: list[Marker] = []
    for m in _BRACKET_RE.finditer(text):
        ids = _bracket_ids(m.group())
        if ids is None:
            continue
        if markers and not text[markers[-1].end : m.start()].strip():
            last = markers.pop()
            markers.append(Marker(last.start, m.end(), last.ids + ids))
        else:
            markers.append(Marker(m.start(), m.end(), ids))
    return markers


def strip_markers(text: str) -> tuple[str, list[str]]:
    """``text`` without its markers (spacing tidied) and the IDs they cite, deduplicated."""
    markers = find_markers(text)
    if not markers:
        return _SPACES.sub(" ", text).strip(), []
    pieces: list[str] = []
    ids: list[str] = []
    last = 0
    for marker in markers:
        # Drop the marker and the space before it; keep one space only between words.
        pieces.append(text[last : marker.start].rstrip())
        after = text[marker.end : marker.end + 1]
        if after and not after.isspace() and after not in _PUNCT_AFTER:
            pieces.append(" ")
        for cited in marker.ids:
            if cited not in ids:
                ids.append(cited)
        last = marker.end
    pieces.append(text[last:])
    return _SPACES.sub(" ", "".join(pieces)).strip(), ids


def parse_structured(values: list[str]) -> tuple[list[str], list[str]]:
    """IDs from a structured draft's citation list, and the entries that are not IDs.

    Tolerant of ``"[id]"`` and ``"id1, id2"`` entries; anything else is malformed.
    """
    ids: list[str] = []
    malformed: list[str] = []
    for value in values:
        inner = value.strip()
        if inner.startswith("[") and inner.endswith("]"):
            inner = inner[1:-1]
        tokens = [t.strip() for t in re.split(r"[,;]", inner)]
        if not inner.strip() or not all(_FULL_TOKEN_RE.match(t) for t in tokens):
            malformed.append(value)
            continue
        for token in tokens:
            if canonical(token) not in ids:
                ids.append(canonical(token))
    return ids, malformed
