"""Naming the place inside an attachment an offset lies in (pmsearch/shared/attachment_places.py)."""

from __future__ import annotations

from pmsearch.shared.attachment_places import place, sheet_heading, slide_heading

TEXT = "\n".join([
    sheet_heading("Budget 2027"), "Item | Total", "Forklift | 48000", "",
    sheet_heading("Notes"), "Approved in March", "",
    slide_heading(2, "Q1 review"), "Revenue up 12%",
])


def test_an_offset_is_placed_in_the_sheet_or_slide_whose_heading_comes_before_it():
    assert place(TEXT, TEXT.index("Forklift")) == "Sheet: Budget 2027"
    assert place(TEXT, TEXT.index("Approved")) == "Sheet: Notes"
    assert place(TEXT, TEXT.index("Revenue")) == "Slide 2: Q1 review"


def test_text_without_headings_has_no_place():
    assert place("Plain attached notes.\nNothing more.", 5) is None


def test_a_heading_line_is_its_own_place():
    assert place(TEXT, 0) == "Sheet: Budget 2027"
