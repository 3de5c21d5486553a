"""Hostile attachments cost only themselves: each is refused or bounded with its reason
in the message's notes, and the rest of the message (its body, its other files) is read.
Nothing is fetched, no macro runs, no XML entity is expanded."""

from __future__ import annotations

import io
import time
import zipfile

from pmsearch.services.searcher.ingest.documents.layout import MAX_CELLS
from pmsearch.services.searcher.ingest.documents.package import MAX_PARTS
from pmsearch.services.searcher.ingest.parser import MAX_FORWARD_NESTING, parse_message
from pmsearch.testing import attachments as files
from tests.services.searcher.ingest.mails import mail, raw

GOOD = files.docx(["The good file is read."])
ENTITIES = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">&lol2;</Types>"""


def with_files(*attachments: tuple[bytes, str]):
    msg = mail("The body is read whatever the files hold.")
    for data, name in attachments:
        msg.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)
    return parse_message(raw(msg))


def assert_rest_is_read(parsed) -> None:
    assert parsed.body_text == "The body is read whatever the files hold."
    assert parsed.attachments[-1].text == "The good file is read."


def test_a_decompression_bomb_is_refused():
    bomb = files.with_part(files.docx(["x"]), "word/media/filler.xml", b"\0" * (64 * 1024 * 1024))
    parsed = with_files((bomb, "bomb.docx"), (GOOD, "good.docx"))
    assert parsed.attachments[0].text is None
    assert parsed.notes[0].startswith("bomb.docx: a decompression bomb: word/media/filler.xml unpacks")
    assert_rest_is_read(parsed)


def test_a_password_protected_file_is_refused_as_encrypted():
    protected = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 4096  # what Office writes: an OLE container
    parsed = with_files((protected, "salaries.xlsx"), (GOOD, "good.docx"))
    assert parsed.notes == ["salaries.xlsx: encrypted with a password, or a legacy binary Office file: not read"]
    assert_rest_is_read(parsed)


def test_xml_entities_are_never_expanded():
    hostile = files.replaced_part(files.docx(["x"]), "[Content_Types].xml", ENTITIES)
    parsed = with_files((hostile, "lol.docx"), (GOOD, "good.docx"))
    assert parsed.notes == ["lol.docx: [Content_Types].xml declares a DTD or entities (an entity expansion attack): not read"]
    assert_rest_is_read(parsed)


def test_a_macro_enabled_document_is_read_and_its_macros_are_not_run():
    macro = files.with_part(files.docx(["Order 7 confirmed."]), "word/vbaProject.bin", b"Attribute VB_Name = 'x'")
    parsed = with_files((macro, "order.docm"),)
    assert parsed.attachments[0].text == "Order 7 confirmed."
    assert parsed.notes == ["order.docm: holds macros, which were not run"]


def test_links_to_other_files_are_not_followed():
    linked = files.with_part(
        files.xlsx({"Sheet1": [["Total", 5]]}), "xl/externalLinks/externalLink1.xml",
        b'<?xml version="1.0"?><externalLink xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"/>',
    )
    parsed = with_files((linked, "linked.xlsx"),)
    assert parsed.attachments[0].text == "Sheet: Sheet1\nTotal | 5"
    assert parsed.notes == ["linked.xlsx: links to other files, which were not opened"]


def test_a_sheet_that_repeats_a_row_a_million_times_is_read_in_bounds():
    sheet = files.ods("Big", [["Part", "Count"], ["Pallet", 1]], repeat_last_row=1_000_000, repeat_columns=16_384)
    began = time.monotonic()
    parsed = with_files((sheet, "big.ods"), (GOOD, "good.docx"))
    assert time.monotonic() - began < 20
    lines = parsed.attachments[0].text.splitlines()
    assert lines[:2] == ["Sheet: Big", "Part | Count"] and 2 < len(lines) <= 2 + 100
    assert_rest_is_read(parsed)


def test_a_spreadsheet_with_more_cells_than_the_limit_is_cut_with_a_note():
    rows = [[f"r{r}c{c}" for c in range(10)] for r in range(MAX_CELLS // 10 + 1000)]
    parsed = with_files((files.xlsx({"Data": rows}), "data.xlsx"),)
    text = parsed.attachments[0].text
    assert text.startswith("Sheet: Data\nr0c0 | r0c1") and "r20999c0" not in text
    assert parsed.notes == ["data.xlsx: only part of its text was read"]


def test_a_package_of_too_many_parts_is_refused():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as package:
        for n in range(MAX_PARTS + 1):
            package.writestr(f"word/part{n}.xml", "<a/>")
    parsed = with_files((out.getvalue(), "many.docx"), (GOOD, "good.docx"))
    assert parsed.notes == [f"many.docx: {MAX_PARTS + 1:,} parts in its ZIP package, more than {MAX_PARTS:,}: not read"]
    assert_rest_is_read(parsed)


def test_a_broken_file_costs_only_itself():
    parsed = with_files((GOOD[: len(GOOD) // 2], "cut.docx"), (GOOD, "good.docx"))
    assert parsed.attachments[0].text is None
    assert parsed.notes[0].startswith("cut.docx: not a readable ZIP package")
    assert_rest_is_read(parsed)


def test_forwarded_messages_nested_without_end_are_read_to_a_depth():
    inner = mail("The innermost words.", subject="Deep", msgid="deep-0@test.example")
    for depth in range(1, 20):
        outer = mail(f"Level {depth}.", subject=f"Fwd {depth}", msgid=f"deep-{depth}@test.example")
        outer.add_attachment(raw(inner), maintype="application", subtype="octet-stream", filename=f"level{depth}.eml")
        inner = outer
    parsed = parse_message(raw(inner))
    assert "Level 18." in parsed.body_text and "The innermost words." not in parsed.body_text
    assert f"forwarded messages nested more than {MAX_FORWARD_NESTING} deep: the inner ones not read" in parsed.notes
