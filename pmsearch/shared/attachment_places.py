"""Where inside an attachment a piece of its text lies: the sheet and row, the slide, the
event or the page that ingest's layout of the file introduces with a heading line
("Sheet: Budget 2027", "Slide 3: Q1 review", "Event: Supplier review", "Page 2 of 5").
Ingest writes those lines (pmsearch/services/searcher/ingest/documents and the PDF
reader); the verifier reads them back to name an excerpt's place, and the answer,
``pmsearch ask`` and the inspector show it.

A sheet's rows are lines in the sheet's order, empty rows left out: where ingest leaves
rows out it writes the next row's number as a line of its own ("(row 12)"), so a row's
number is counted from its sheet's heading and is the number the spreadsheet shows."""

from __future__ import annotations

import re

_HEADING = re.compile(r"^(Sheet: .+|Slide \d+(?:: .+)?|Event(?: \(cancelled\))?: .+|Page \d+ of \d+)$", re.M)
_ROW_MARK = re.compile(r"^\(row (\d+)\)$")
MAX_PLACE_CHARS = 120


def sheet_heading(name: str) -> str:
    return f"Sheet: {' '.join(name.split())}"


def slide_heading(number: int, title: str = "") -> str:
    return f"Slide {number}: {' '.join(title.split())}" if title.strip() else f"Slide {number}"


def page_heading(number: int, pages: int) -> str:
    return f"Page {number} of {pages}"


def row_mark(number: int) -> str:
    """The line ingest writes before a sheet's row when the rows before it were empty."""
    return f"(row {number})"


def row_mark_number(line: str) -> int | None:
    """The row number a row mark line names; None for any other line."""
    mark = _ROW_MARK.match(line.strip())
    return int(mark.group(1)) if mark else None


def place(text: str, offset: int) -> str | None:
    """The heading line nearest before ``offset`` in an attachment's ``text`` (the one
    the offset lies in), with the row for a sheet's row; None when the text has none there."""
    found = None
    for match in _HEADING.finditer(text):
        if match.start() > offset:
            break
        found = match
    if found is None:
        return None
    heading = found.group(1)
    line_start = text.rfind("\n", 0, offset) + 1
    if heading.startswith("Sheet: ") and line_start > found.end():
        end = text.find("\n", offset)
        row = _row(text[found.end() : line_start], text[line_start : end if end >= 0 else len(text)])
        if row is not None:
            return f"{heading[: MAX_PLACE_CHARS - 12]}, row {row}"
    return heading[:MAX_PLACE_CHARS]


def _row(before: str, line: str) -> int | None:
    """The number of the sheet row ``line`` is, ``before`` being the sheet's lines from
    its heading's end to that line: the first row is 1, each further line the next row
    unless a row mark names it. None for a blank line or a mark."""
    if not line.strip() or row_mark_number(line) is not None:
        return None
    row = 0
    for earlier in before.split("\n"):
        marked = row_mark_number(earlier)
        if marked is not None:
            row = marked - 1
        elif earlier.strip():
            row += 1
    return row + 1
