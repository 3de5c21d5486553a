"""How extracted text is laid out, the same for every format: the verifier and the
passages read a line with ``|`` as a table row under the table's first row."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

MAX_CELLS = 200_000  # cells read from one file; the rest is left out (noted as cut)
MAX_COLUMNS = 200  # of one row, past its last filled cell


def cell_text(value: object) -> str:
    """A cell's value as a reader would say it: whole numbers without ``.0``, dates in
    ISO form, no line breaks (a row is one line)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ", timespec="minutes")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return " ".join(str(value).replace("|", "/").split())


def row_line(cells: Iterable[object]) -> str | None:
    """One table row as a line, its empty trailing cells dropped; None when it is empty."""
    texts = [cell_text(c) for c in cells][:MAX_COLUMNS]
    while texts and not texts[-1]:
        texts.pop()
    return " | ".join(texts) if any(texts) else None


class Budget:
    """Lines gathered up to a number of characters and of cells."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.cells = 0
        self.lines: list[str] = []
        self.cut = False

    def add(self, line: str, cells: int = 0) -> bool:
        """Keep ``line``; False (and cut) once the characters or cells are spent."""
        if self.cut:
            return False
        self.cells += cells
        if self.cells > MAX_CELLS or len(line) + 1 > self.room:
            self.cut = True
            return False
        self.lines.append(line)
        self.room -= len(line) + 1
        return True

    def gap(self) -> None:
        """A blank line: a table ends, a new sheet or slide begins."""
        if self.lines and self.lines[-1]:
            self.lines.append("")

    def text(self) -> tuple[str | None, bool]:
        body = "\n".join(self.lines).strip()
        return (body or None), self.cut
