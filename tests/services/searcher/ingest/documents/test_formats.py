"""Text from each attached format, read as ``parse_message`` reads a real message: in
order, tables as rows under their header, the place (sheet, slide) named."""

from __future__ import annotations

from datetime import datetime

from pmsearch.services.searcher.ingest.parser import parse_message
from pmsearch.testing import attachments as files
from tests.services.searcher.ingest.mails import mail, raw

DOCX, XLSX, PPTX = (files.CONTENT_TYPES[ext] for ext in ("docx", "xlsx", "pptx"))


def attached(data: bytes, filename: str, ctype: str = "application/octet-stream"):
    msg = mail("Please see the attached file.")
    maintype, subtype = ctype.split("/")
    msg.add_attachment(data, maintype=maintype, subtype=subtype, filename=filename)
    parsed = parse_message(raw(msg))
    (attachment,) = parsed.attachments
    return attachment, parsed


def test_a_word_document_gives_its_paragraphs_and_table_rows_in_order():
    data = files.docx(
        ["Quote Q-2291 for Acme Logistics.", "Valid until 30 April 2027."],
        [["Item", "Qty", "Price"], ["Electric forklift", "2", "24,000.00"]],
        after="Delivery within six weeks of the order.",
    )
    attachment, parsed = attached(data, "quote.docx", DOCX)
    assert attachment.text.splitlines() == [
        "Quote Q-2291 for Acme Logistics.", "Valid until 30 April 2027.", "",
        "Item | Qty | Price", "Electric forklift | 2 | 24,000.00", "",
        "Delivery within six weeks of the order.",
    ]
    assert parsed.notes == []


def test_a_merged_word_table_cell_is_read_once_and_two_equal_cells_twice():
    import io

    from docx import Document

    document = Document()
    grid = document.add_table(rows=2, cols=3)
    for c, value in enumerate(["Cleaning", "daily", "daily"]):
        grid.cell(0, c).text = value
    grid.cell(1, 0).text = "Notice"
    grid.cell(1, 1).merge(grid.cell(1, 2)).text = "six months"
    out = io.BytesIO()
    document.save(out)
    attachment, _ = attached(out.getvalue(), "terms.docx", DOCX)
    assert attachment.text.splitlines() == ["Cleaning | daily | daily", "Notice | six months"]


def test_a_spreadsheet_names_each_sheet_and_gives_formulas_as_their_cached_values():
    data = files.xlsx(
        {"Budget 2027": [["Item", "Qty", "Unit price", "Total"], ["Forklift", 2, 24000]],
         "Notes": [["Approved by Dana on 3 March"]]},
        formulas={"Budget 2027": ("D2", "=B2*C2", 48000)},
    )
    attachment, _ = attached(data, "budget.xlsx")  # sent as octet-stream: the name decides
    assert attachment.text.splitlines() == [
        "Sheet: Budget 2027", "Item | Qty | Unit price | Total", "Forklift | 2 | 24000 | 48000", "",
        "Sheet: Notes", "Approved by Dana on 3 March",
    ]


def test_a_sheets_empty_rows_are_left_out_and_the_next_rows_number_marked():
    data = files.xlsx({"Rates": [["Rate card 2027"], [], ["Route", "Rate"], ["Lyon", 980], [], [], ["Prague", 1180]]})
    attachment, _ = attached(data, "rates.xlsx")
    assert attachment.text.splitlines() == [
        "Sheet: Rates", "Rate card 2027", "(row 3)", "Route | Rate", "Lyon | 980", "(row 7)", "Prague | 1180",
    ]
    sheet, _ = attached(files.ods("Rates", [["Route", "Rate"], [], ["Lyon", 980]]), "rates.ods")
    assert sheet.text.splitlines() == ["Sheet: Rates", "Route | Rate", "(row 3)", "Lyon | 980"]


def test_slides_give_their_titles_text_and_tables():
    data = files.pptx(
        [("Q1 review", ["Revenue up 12%", "Two new depots"])],
        table=[["Depot", "Orders"], ["Lyon", "1,204"]],
    )
    attachment, _ = attached(data, "review.pptx", PPTX)
    assert attachment.text.splitlines() == [
        "Slide 1: Q1 review", "Revenue up 12%", "Two new depots", "",
        "Slide 2: Figures", "", "Depot | Orders", "Lyon | 1,204",
    ]


def test_opendocument_text_spreadsheet_and_slides_are_read():
    text, _ = attached(files.odt(["Minutes of the works council.", "The canteen reopens on 2 June."]), "minutes.odt")
    assert text.text.splitlines() == ["Minutes of the works council.", "The canteen reopens on 2 June."]
    sheet, _ = attached(files.ods("Stock", [["Part", "Count"], ["Pallet", 340]]), "stock.ods")
    assert sheet.text.splitlines() == ["Sheet: Stock", "Part | Count", "Pallet | 340"]
    slides, _ = attached(files.odp([("Roadmap", ["Pilot in Lyon", "Rollout in autumn"])]), "plan.odp")
    assert slides.text.splitlines() == ["Slide 1: Roadmap", "Pilot in Lyon", "Rollout in autumn"]


def test_an_rtf_document_gives_its_text():
    attachment, _ = attached(files.rtf(["Le devis est valable 30 jours.", "Livraison sous quinzaine."]), "devis.rtf")
    assert attachment.text.splitlines() == ["Le devis est valable 30 jours.", "Livraison sous quinzaine."]


def test_an_invitation_says_when_where_and_who_with_its_time_zone():
    data = files.ics(
        summary="Supplier review", start=datetime(2027, 3, 4, 10, 0, tzinfo=files.PARIS),
        end=datetime(2027, 3, 4, 11, 30, tzinfo=files.PARIS), location="Room 2, Lyon depot",
        organizer=("Dana Lee", "dana@acme.example"), attendees=[("Bob Stone", "bob@acme.example")],
    )
    attachment, _ = attached(data, "invite.ics", "text/calendar")
    assert attachment.text.splitlines() == [
        "An invitation (REQUEST).", "",
        "Event: Supplier review",
        "Starts: 2027-03-04 10:00 (Europe/Paris)",
        "Ends: 2027-03-04 11:30 (Europe/Paris)",
        "Where: Room 2, Lyon depot",
        "Organiser: Dana Lee <dana@acme.example>",
        "Attendees: Bob Stone <bob@acme.example>",
    ]


def test_a_cancellation_says_the_event_is_cancelled():
    data = files.ics(
        method="CANCEL", summary="Supplier review", start=datetime(2027, 3, 4, 10, 0, tzinfo=files.PARIS),
        end=datetime(2027, 3, 4, 11, 0, tzinfo=files.PARIS), location="Room 2",
        organizer=("Dana Lee", "dana@acme.example"), attendees=[],
    )
    attachment, _ = attached(data, "cancel.ics", "text/calendar")
    assert attachment.text.splitlines()[:3] == [
        "A cancellation: this event is cancelled (CANCEL).", "", "Event (cancelled): Supplier review",
    ]


def test_an_attached_eml_file_is_read_as_forwarded_mail_with_its_own_sender():
    original = mail("The pallets ship on Friday.", subject="Shipping", sender="Carol Ng <carol@supplier.example>",
                    msgid="orig@supplier.example")
    msg = mail("FYI, see below.", subject="Fwd: Shipping")
    msg.add_attachment(raw(original), maintype="application", subtype="octet-stream", filename="Shipping.eml")
    parsed = parse_message(raw(msg))
    assert parsed.attachments == []
    forwarded = parsed.body_text.split("---------- Forwarded message ----------", 1)[1]
    assert "From: Carol Ng <carol@supplier.example>" in forwarded
    assert "Subject: Shipping" in forwarded and "The pallets ship on Friday." in forwarded
    assert parsed.body_text.startswith("FYI, see below.")  # the forwarder's own words, apart


def test_a_legacy_office_file_is_kept_with_a_note_and_no_text():
    attachment, parsed = attached(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 512, "old.doc", "application/msword")
    assert attachment.text is None
    assert parsed.notes == ["old.doc: a legacy binary Office file (.doc, .xls, .ppt): not read; "
                            "save it as .docx, .xlsx or .pptx"]


def test_an_outlook_message_file_is_kept_with_a_note_and_no_text():
    attachment, parsed = attached(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 512, "offer.msg", "application/octet-stream")
    assert attachment.text is None
    assert parsed.notes == ["offer.msg: an Outlook message file (.msg): not read; "
                            "forward the message as an attachment (.eml) instead"]
