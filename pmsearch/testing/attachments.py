"""Real attachments made with the libraries people's software writes them with (no
binary fixtures): Word, Excel, PowerPoint, OpenDocument, RTF and calendar files, and
hostile variants of them."""

from __future__ import annotations

import io
import zipfile
from datetime import datetime
from zoneinfo import ZoneInfo

# The type each built file is sent as, by its extension.
CONTENT_TYPES = {
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "ics": "text/calendar",
}


def docx(paragraphs: list[str], table: list[list[str]] | None = None, after: str = "") -> bytes:
    from docx import Document

    document = Document()
    for text in paragraphs:
        document.add_paragraph(text)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    if after:
        document.add_paragraph(after)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def xlsx(
    sheets: dict[str, list[list[object]]], formulas: dict[str, tuple[str, str, object]] | None = None,
    created: datetime | None = None,
) -> bytes:
    """``formulas``: sheet -> (cell, formula, the value Excel computed and cached)."""
    import xlsxwriter

    out = io.BytesIO()
    book = xlsxwriter.Workbook(out, {"in_memory": True})
    if created is not None:
        book.set_properties({"created": created.replace(tzinfo=None)})
    for name, rows in sheets.items():
        sheet = book.add_worksheet(name)
        for r, row in enumerate(rows):
            for c, value in enumerate(row):
                sheet.write(r, c, value)
        if formulas and name in formulas:
            cell, formula, cached = formulas[name]
            sheet.write_formula(cell, formula, None, cached)
    book.close()
    return out.getvalue()


def pptx(slides: list[tuple[str, list[str]]], table: list[list[str]] | None = None) -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    for title, bullets in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        body = slide.placeholders[1].text_frame
        body.text = bullets[0]
        for bullet in bullets[1:]:
            body.add_paragraph().text = bullet
    if table:
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = "Figures"
        grid = slide.shapes.add_table(len(table), len(table[0]), Inches(1), Inches(2), Inches(6), Inches(2)).table
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def odt(paragraphs: list[str]) -> bytes:
    from odf.opendocument import OpenDocumentText
    from odf.text import P

    document = OpenDocumentText()
    for text in paragraphs:
        document.text.addElement(P(text=text))
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


def ods(sheet: str, rows: list[list[object]], *, repeat_last_row: int = 1, repeat_columns: int = 1) -> bytes:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    document = OpenDocumentSpreadsheet()
    table = Table(name=sheet)
    for r, row in enumerate(rows):
        last = r == len(rows) - 1
        line = TableRow(numberrowsrepeated=repeat_last_row) if last and repeat_last_row > 1 else TableRow()
        for value in row:
            if isinstance(value, (int, float)):
                cell = TableCell(valuetype="float", value=value)
            else:
                cell = TableCell(valuetype="string")
            if repeat_columns > 1 and last:
                cell.setAttribute("numbercolumnsrepeated", repeat_columns)
            cell.addElement(P(text=str(value)))
            line.addElement(cell)
        table.addElement(line)
    document.spreadsheet.addElement(table)
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


def odp(slides: list[tuple[str, list[str]]]) -> bytes:
    from odf.draw import Frame, Page, TextBox
    from odf.opendocument import OpenDocumentPresentation
    from odf.style import MasterPage, PageLayout
    from odf.text import P

    document = OpenDocumentPresentation()
    layout = PageLayout(name="layout")
    document.automaticstyles.addElement(layout)
    master = MasterPage(name="master", pagelayoutname=layout)
    document.masterstyles.addElement(master)
    for title, lines in slides:
        page = Page(name=title, masterpagename=master)
        frame = Frame(width="20cm", height="10cm", x="1cm", y="1cm")
        box = TextBox()
        for line in lines:
            box.addElement(P(text=line))
        frame.addElement(box)
        page.addElement(frame)
        document.presentation.addElement(page)
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


def rtf(paragraphs: list[str]) -> bytes:
    body = "".join(f"\\pard {text}\\par\n" for text in paragraphs)
    return ("{\\rtf1\\ansi\\deff0 {\\fonttbl {\\f0 Times;}}\n" + body + "}").encode()


def ics(*, method: str = "REQUEST", summary: str, start: datetime, end: datetime, location: str,
        organizer: tuple[str, str], attendees: list[tuple[str, str]], uid: str = "evt-1@test.example",
        prodid: str = "-//pmsearch tests//EN") -> bytes:
    from icalendar import Calendar, Event, vCalAddress

    calendar = Calendar()
    calendar.add("prodid", prodid)
    calendar.add("version", "2.0")
    calendar.add("method", method)
    event = Event()
    event.add("uid", uid)
    event.add("summary", summary)
    event.add("dtstart", start)
    event.add("dtend", end)
    event.add("location", location)
    who = vCalAddress(f"mailto:{organizer[1]}")
    who.params["cn"] = organizer[0]
    event["organizer"] = who
    for name, address in attendees:
        attendee = vCalAddress(f"mailto:{address}")
        attendee.params["cn"] = name
        event.add("attendee", attendee)
    if method == "CANCEL":
        event.add("status", "CANCELLED")
    calendar.add_component(event)
    return calendar.to_ical()


PARIS = ZoneInfo("Europe/Paris")


def with_part(package: bytes, name: str, data: bytes, *, compress: bool = True) -> bytes:
    """``package`` (a ZIP) with one more part."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(package)) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            target.writestr(item, source.read(item.filename))
        target.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED)
    return out.getvalue()


def replaced_part(package: bytes, name: str, data: bytes) -> bytes:
    """``package`` with part ``name``'s content replaced."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(package)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            target.writestr(item.filename, data if item.filename == name else source.read(item.filename))
    return out.getvalue()
