"""Word, Excel and PowerPoint files (Office Open XML), by python-docx, openpyxl and
python-pptx, each opened only after its package passed :func:`open_package`."""

from __future__ import annotations

import logging
import warnings
from typing import Any

from pmsearch.services.searcher.ingest.documents.layout import Budget, row_line
from pmsearch.services.searcher.ingest.documents.package import opened
from pmsearch.shared.attachment_places import row_mark, sheet_heading, slide_heading

Extracted = tuple[str | None, bool, list[str]]


def docx_text(data: bytes, room: int) -> Extracted:
    """Paragraphs and tables in document order; a table's rows as ``cell | cell``."""
    from docx import Document
    from docx.table import Table

    document, notes = opened(data, "Word document", Document)
    out = Budget(room)
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            out.gap()
            if not _table(out, block):
                break
            out.gap()
        elif block.text.strip() and not out.add(block.text.strip()):
            break
    return (*out.text(), notes)


def _table(out: Budget, table: Any) -> bool:
    for row in table.rows:
        cells = _distinct(row.cells)
        line = row_line(cells)
        if line is not None and not out.add(line, len(cells)):
            return False
    return True


def _distinct(cells: Any) -> list[str]:
    """A row's cells' texts, a merged cell once: python-docx gives a cell spanning
    columns once for each, as the same table cell element. Two cells that only say the
    same thing are both kept."""
    texts: list[str] = []
    seen: set[int] = set()
    for cell in cells:
        if id(cell._tc) not in seen:  # noqa: SLF001 - the cell's element is its identity
            seen.add(id(cell._tc))  # noqa: SLF001
            texts.append(cell.text)
    return texts


def xlsx_text(data: bytes, room: int) -> Extracted:
    """Each sheet: a line naming it, then its rows as ``cell | cell``, formulas as the
    values Excel last computed (the file's cache), never evaluated here; where empty rows
    are left out, the next row's number as a line of its own (its place)."""
    import openpyxl

    logging.getLogger("openpyxl").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unknown extensions, data validation, ...
        book, notes = opened(data, "spreadsheet", lambda stream: openpyxl.load_workbook(
            stream, read_only=True, data_only=True, keep_links=False))
    out = Budget(room)
    try:
        for sheet in book.worksheets:
            out.gap()
            if not out.add(sheet_heading(sheet.title)):
                break
            following = 1  # the row a line written next is, unless marked
            for number, values in enumerate(sheet.iter_rows(min_row=1, values_only=True), start=1):
                line = row_line(values)
                if line is None:
                    continue
                if number != following and not out.add(row_mark(number)):
                    break
                if not out.add(line, len(values)):
                    break
                following = number + 1
            if out.cut:
                break
    finally:
        book.close()
    return (*out.text(), notes)


def pptx_text(data: bytes, room: int) -> Extracted:
    """Each slide: ``Slide n: <title>``, then the text of its other shapes and tables."""
    from pptx import Presentation

    deck, notes = opened(data, "presentation", Presentation)
    out = Budget(room)
    for number, slide in enumerate(deck.slides, start=1):
        title_shape = slide.shapes.title
        title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
        out.gap()
        if not out.add(slide_heading(number, title)):
            break
        title_id = title_shape.shape_id if title_shape is not None else None
        for shape in slide.shapes:
            if shape.shape_id == title_id:  # shapes are new proxies each time: compare ids
                continue
            if getattr(shape, "has_table", False) and shape.has_table:
                out.gap()
                if not _table(out, shape.table):
                    break
                out.gap()
            elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
                for paragraph in shape.text_frame.paragraphs:
                    text = " ".join("".join(run.text for run in paragraph.runs).split())
                    if text and not out.add(text):
                        break
            if out.cut:
                break
        if out.cut:
            break
    return (*out.text(), notes)


__all__ = ["docx_text", "pptx_text", "xlsx_text"]
