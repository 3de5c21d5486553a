"""Where inside an attachment a piece of its text lies: the sheet, slide or event that
ingest's layout of the file introduces with a heading line ("Sheet: Budget 2027",
"Slide 3: Q1 review", "Event: Supplier review"). Ingest writes those lines
(pmsearch/services/searcher/ingest/documents); the verifier reads them back to name an
excerpt's place, and the answer, ``pmsearch ask`` and the inspector show it."""

from __future__ import annotations

import re

_HEADING = re.compile(r"^(Sheet: .+|Slide \d+(?:: .+)?|Event(?: \(cancelled\))?: .+)$", re.M)
MAX_PLACE_CHARS = 120


def sheet_heading(name: str) -> str:
    return f"Sheet: {' '.join(name.split())}"


def slide_heading(number: int, title: str = "") -> str:
    return f"Slide {number}: {' '.join(title.split())}" if title.strip() else f"Slide {number}"


def place(text: str, offset: int) -> str | None:
    """The heading line nearest before ``offset`` in an attachment's ``text`` (the one
    the offset lies in), None when the text has none there."""
    found = None
    for match in _HEADING.finditer(text):
        if match.start() > offset:
            break
        found = match.group(1)
    return found[:MAX_PLACE_CHARS] if found else None
