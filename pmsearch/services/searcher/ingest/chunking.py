"""Splitting long text into overlapping chunks at paragraph and sentence boundaries.

Chunks are what get embedded and cited, so a chunk should hold whole sentences: a
citation excerpt cut mid-word is harder to verify and to read. A short overlap keeps a
fact that straddles a boundary findable from either side.
"""

from __future__ import annotations

import re

_PARAGRAPHS = re.compile(r"\n\s*\n")
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n")


def split_text(text: str, size: int, overlap: int | None = None) -> list[str]:
    """Chunks of at most about ``size`` characters; ``overlap`` (default size/8, at most
    200) characters of the previous chunk's tail start the next one."""
    text = text.strip()
    if not text:
        return []
    if len(text) <= size:
        return [text]
    if overlap is None:
        overlap = min(200, size // 8)
    units = list(_units(text, size))
    chunks: list[str] = []
    current = ""
    for unit, sep in units:
        candidate = f"{current}{sep}{unit}" if current else unit
        if len(candidate) <= size or not current:
            current = candidate
            continue
        chunks.append(current)
        tail = _tail(current, overlap)
        current = f"{tail} {unit}" if tail and len(tail) + 1 + len(unit) <= size else unit
    if current:
        chunks.append(current)
    return chunks


def _units(text: str, size: int):
    """(piece, separator-before-it): paragraphs, or sentences/words of an oversized one."""
    for para in (p.strip() for p in _PARAGRAPHS.split(text)):
        if not para:
            continue
        sep = "\n\n"
        if len(para) <= size:
            yield para, sep
            continue
        for sentence in (s.strip() for s in _SENTENCES.split(para)):
            if not sentence:
                continue
            for piece in _hard_split(sentence, size):
                yield piece, sep
                sep = " "


def _hard_split(sentence: str, size: int) -> list[str]:
    """A sentence longer than a chunk: cut at spaces, or anywhere for space-less text."""
    if len(sentence) <= size:
        return [sentence]
    pieces, current = [], ""
    for word in sentence.split(" "):
        while len(word) > size:  # URLs, base64 blobs, CJK text without spaces
            if current:
                pieces.append(current)
                current = ""
            pieces.append(word[:size])
            word = word[size:]
        candidate = f"{current} {word}" if current else word
        if len(candidate) > size:
            pieces.append(current)
            current = word
        else:
            current = candidate
    if current:
        pieces.append(current)
    return pieces


def _tail(chunk: str, overlap: int) -> str:
    """The last ``overlap`` characters, starting at a sentence (else word) boundary."""
    if overlap <= 0:
        return ""
    tail = chunk[-overlap:]
    if len(tail) == len(chunk):
        return ""  # the whole previous chunk would repeat; no overlap then
    m = re.search(r"(?<=[.!?])\s+", tail)
    if m:
        return tail[m.end():].strip()
    space = tail.find(" ")
    return tail[space + 1:].strip() if space >= 0 else ""
