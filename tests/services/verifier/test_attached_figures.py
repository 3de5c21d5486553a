"""A figure from an attached spreadsheet, checked against its row: the verifier reads
the text ingest extracted from a real ``.xlsx`` (tests/services/searcher/ingest/documents)
and keeps a claim whose figure is in the row it names, cut from that attachment and
named by its sheet and row, and removes one whose figure is not; a claim from a longer
PDF is named by its page."""

from __future__ import annotations

from pmsearch.services.searcher.ingest.parser import parse_message
from pmsearch.services.verifier.service import verify
from pmsearch.shared.messages import Draft, DraftSentence
from pmsearch.testing import attachments as files
from tests.services.searcher.ingest.mails import mail, make_pdf, raw
from tests.services.verifier.factory import message

BUDGET = "mbudget0000001"


def budget_evidence():
    sheet = files.xlsx(
        {"Budget 2027": [["Item", "Qty", "Unit price", "Total"], ["Electric forklift", 2, 24000],
                         ["Pallet racking", 40, 310]]},
        formulas={"Budget 2027": ("D2", "=B2*C2", 48000)},
    )
    msg = mail("The budget for next year is attached.", subject="Budget 2027")
    msg.add_attachment(sheet, maintype="application", subtype="octet-stream", filename="budget.xlsx")
    (attachment,) = parse_message(raw(msg)).attachments
    source = message(BUDGET, "The budget for next year is attached.", subject="Budget 2027",
                     attachments={attachment.filename: attachment.text})
    return {BUDGET: source}


def claim(text: str) -> Draft:
    return Draft(sentences=[DraftSentence(text=text, citations=[BUDGET])])


def test_a_figure_in_the_rows_of_an_attached_sheet_is_kept_with_an_excerpt_of_that_row():
    verdict = verify(claim("The electric forklifts cost 48000 in total."), budget_evidence(),
                     question="What do the electric forklifts cost in total?")
    (kept,) = verdict.kept
    (citation,) = kept.citations
    assert citation.excerpt.part == "attachment:budget.xlsx" and citation.excerpt.place == "Sheet: Budget 2027, row 2"
    assert "Electric forklift | 2 | 24000 | 48000" in citation.excerpt.text


def test_a_figure_the_sheet_does_not_hold_is_removed():
    verdict = verify(claim("The electric forklifts cost 52000 in total."), budget_evidence(),
                     question="What do the electric forklifts cost in total?")
    assert verdict.kept == [] and len(verdict.removed) == 1


def test_another_rows_figure_is_removed_as_not_found_where_the_claim_is():
    verdict = verify(claim("The electric forklifts cost 310 in total."), budget_evidence(),
                     question="What do the electric forklifts cost in total?")
    assert [(r.reason, r.offending) for r in verdict.removed] == [("figure_not_found", "310")]


def test_figures_of_two_rows_each_named_by_its_own_row_are_kept():
    verdict = verify(claim("The racking costs 310 a unit and the forklifts 24000 each."), budget_evidence())
    assert len(verdict.kept) == 1


def test_a_claim_from_the_second_page_of_an_attached_pdf_is_cited_to_that_page():
    msg = mail("The supply contract is attached.", subject="Supply contract")
    msg.add_attachment(make_pdf(["Supply contract 2027", "Delivery within 10 days of the order."],
                                ["Late delivery costs a penalty of EUR 400 a day."]),
                       maintype="application", subtype="pdf", filename="contract.pdf")
    (attachment,) = parse_message(raw(msg)).attachments
    evidence = {BUDGET: message(BUDGET, "The supply contract is attached.", subject="Supply contract",
                                attachments={attachment.filename: attachment.text})}
    verdict = verify(claim("Late delivery costs a penalty of EUR 400 a day."), evidence,
                     question="What is the penalty for late delivery?")
    (kept,) = verdict.kept
    (citation,) = kept.citations
    assert citation.excerpt.part == "attachment:contract.pdf" and citation.excerpt.place == "Page 2 of 2"
