"""Naming the place inside an attachment an offset lies in (pmsearch/shared/attachment_places.py)."""

from __future__ import annotations

from pmsearch.shared.attachment_places import page_heading, place, row_mark, sheet_heading, slide_heading

TEXT = "\n".join([
    sheet_heading("Budget 2027"), "Item | Total", "Forklift | 48000", "",
    sheet_heading("Notes"), "Approved in March", "",
    slide_heading(2, "Q1 review"), "Revenue up 12%",
])


def test_an_offset_is_placed_in_the_sheet_row_or_slide_whose_heading_comes_before_it():
    assert place(TEXT, TEXT.index("Forklift")) == "Sheet: Budget 2027, row 2"
    assert place(TEXT, TEXT.index("Approved")) == "Sheet: Notes, row 1"
    assert place(TEXT, TEXT.index("Revenue")) == "Slide 2: Q1 review"


def test_an_offset_inside_a_row_names_that_row():
    assert place(TEXT, TEXT.index("48000")) == "Sheet: Budget 2027, row 2"


def test_a_row_mark_numbers_the_rows_after_it():
    text = "\n".join([sheet_heading("Rates"), "Rate card 2027", row_mark(4), "Route | Rate", "Lyon | 980",
                      row_mark(9), "Prague | 1180"])
    assert place(text, text.index("Rate card")) == "Sheet: Rates, row 1"
    assert place(text, text.index("Route")) == "Sheet: Rates, row 4"
    assert place(text, text.index("Lyon")) == "Sheet: Rates, row 5"
    assert place(text, text.index("Prague")) == "Sheet: Rates, row 9"


def test_a_page_of_a_longer_pdf_is_its_place():
    text = "\n".join([page_heading(1, 2), "Terms of delivery.", "", page_heading(2, 2), "Penalty: EUR 400 a day."])
    assert place(text, text.index("Penalty")) == "Page 2 of 2"
    assert place(text, text.index("Terms")) == "Page 1 of 2"


def test_text_without_headings_has_no_place():
    assert place("Plain attached notes.\nNothing more.", 5) is None


def test_a_heading_line_is_its_own_place():
    assert place(TEXT, 0) == "Sheet: Budget 2027"
