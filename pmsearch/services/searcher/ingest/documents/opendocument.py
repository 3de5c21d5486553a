"""OpenDocument text, spreadsheets and presentations (LibreOffice's .odt, .ods, .odp), by
odfpy, opened only after the package passed its checks."""

from __future__ import annotations

import re
from typing import Any

from pmsearch.services.searcher.ingest.documents.layout import MAX_COLUMNS, Budget, row_line
from pmsearch.services.searcher.ingest.documents.package import opened
from pmsearch.shared.attachment_places import row_mark, sheet_heading, slide_heading

Extracted = tuple[str | None, bool, list[str]]
# A row or cell may say it repeats (an empty sheet is one row repeated a million times):
# an empty one is skipped, a filled one repeated at most this often.
MAX_REPEAT = 100
# A name as ODF writes it where a name may not hold every character: "Kiel_20_roadmap".
_ESCAPED = re.compile(r"_([0-9A-Fa-f]{2})_")


def odf_text(data: bytes, room: int) -> Extracted:
    from odf.opendocument import load

    document, notes = opened(data, "OpenDocument file", load)
    out = Budget(room)
    if document.mimetype.endswith("spreadsheet"):
        _sheets(document, out)
    elif document.mimetype.endswith("presentation"):
        _slides(document, out)
    else:
        _blocks(document.text, out)
    return (*out.text(), notes)


def _qname(node: Any) -> str:
    return node.qname[1] if getattr(node, "qname", None) else ""


def _text(node: Any) -> str:
    from odf import teletype

    return " ".join(teletype.extractText(node).split())


def _blocks(parent: Any, out: Budget) -> bool:
    """Paragraphs, headings, lists and tables of ``parent`` in order."""
    for node in parent.childNodes:
        name = _qname(node)
        if name in ("p", "h"):
            text = _text(node)
            if text and not out.add(text):
                return False
        elif name == "table":
            out.gap()
            if not _rows(node, out):
                return False
            out.gap()
        elif name in ("list", "list-item", "section", "frame", "text-box"):
            if not _blocks(node, out):
                return False
    return True


def _repeat(node: Any, attribute: str) -> int:
    try:
        return max(1, int(node.getAttribute(attribute) or 1))
    except (ValueError, TypeError):
        return 1


def _cell(node: Any) -> object:
    kind = node.getAttribute("valuetype") or ""
    if kind in ("float", "percentage", "currency"):
        try:
            return float(node.getAttribute("value"))
        except (TypeError, ValueError):
            pass
    return _text(node)


def _rows(table: Any, out: Budget, *, numbered: bool = False) -> bool:
    """The table's rows as lines; ``numbered`` (a sheet's) with a row mark where empty
    rows were left out, so each row's place is its number in the sheet."""
    from odf.table import TableRow

    number = following = 1  # the row this is; the row a line written next is, unless marked
    for row in table.getElementsByType(TableRow):
        cells: list[object] = []
        for cell in row.childNodes:
            if _qname(cell) not in ("table-cell", "covered-table-cell"):
                continue
            value = _cell(cell)
            cells.extend([value] * min(_repeat(cell, "numbercolumnsrepeated"), MAX_COLUMNS - len(cells)))
            if len(cells) >= MAX_COLUMNS:
                break
        line = row_line(cells)
        repeat = _repeat(row, "numberrowsrepeated")
        if line is not None:
            if numbered and number != following and not out.add(row_mark(number)):
                return False
            for _ in range(min(repeat, MAX_REPEAT)):
                if not out.add(line, len(cells)):
                    return False
            following = number + min(repeat, MAX_REPEAT)
        number += repeat
    return True


def _sheets(document: Any, out: Budget) -> None:
    from odf.table import Table

    for sheet in document.spreadsheet.getElementsByType(Table):
        out.gap()
        if not out.add(sheet_heading(sheet.getAttribute("name") or "")) or not _rows(sheet, out, numbered=True):
            return


def _slides(document: Any, out: Budget) -> None:
    from odf.draw import Page

    for number, page in enumerate(document.presentation.getElementsByType(Page), start=1):
        out.gap()
        if not out.add(slide_heading(number, _slide_title(page))) or not _blocks(page, out):
            return


def _slide_title(page: Any) -> str:
    """The text of the slide's title frame, else the slide's own name unless it is a
    default one ("page3")."""
    from odf.draw import Frame

    for frame in page.getElementsByType(Frame):
        if (frame.getAttribute("class") or "") == "title":
            return _text(frame)
    name = _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), page.getAttribute("name") or "")
    return "" if re.fullmatch(r"(?i)(page|slide)\s*\d*", name) else name
