"""The mail's sentence a written one was made from (services/answerer/fallback.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from pmsearch.services.answerer.draft import cite
from pmsearch.services.answerer.fallback import source_sentence
from pmsearch.shared.messages import DraftSentence, EvidenceMessage

ACCEPT = EvidenceMessage(
    message_id="m-accept", tenant_id="acme", thread_id="t-golf", mailbox="alice",
    sender="Sabine Roth <sabine@northwind.example>", date=datetime(2024, 4, 3, tzinfo=UTC),
    subject="Decision on claim CLM-2024-55817",
    body="Dear Mr Keller,\n\nthank you for the photos of the Golf. The claim is accepted after review. "
    "We will pay EUR 2,115.50 to your account within ten days. The deductible of EUR 300.00 applies.\n\n"
    "Kind regards,\nSabine Roth",
)
EVIDENCE = {ACCEPT.message_id: ACCEPT}
QUESTION = "How much will the insurer pay for the Golf claim?"


def written(text: str) -> DraftSentence:
    return DraftSentence(text=text, citations=["m-accept"])


def test_the_fallback_is_the_sentence_sharing_the_written_ones_figure_and_words():
    fallback = source_sentence(written("The insurer will pay EUR 2,115.00 to the account."), EVIDENCE)
    assert fallback is not None
    assert fallback.text == 'Sabine Roth, 3 April: "We will pay EUR 2,115.50 to your account within ten days."'
    assert fallback.citations == ["m-accept"]


def test_a_neighbour_joins_the_fallback_only_for_what_the_first_sentence_lacks():
    fallback = source_sentence(written("The claim was accepted and EUR 2,115.50 will be paid."), EVIDENCE)
    assert fallback is not None
    assert fallback.text.endswith('"The claim is accepted after review. We will pay EUR 2,115.50 to your account within ten days."')


def test_a_written_sentence_sharing_nothing_with_its_source_has_no_fallback():
    assert source_sentence(written("Bananas ripen quickly."), EVIDENCE) is None


def test_the_write_or_extract_style_gives_each_written_sentence_its_fallback_and_code_statements_none():
    cited = cite(QUESTION, [written("The insurer will pay EUR 2,115.00 to the account.")], [ACCEPT], style="write_or_extract")
    first, *added = cited.draft.sentences
    assert first.fallback is not None and "EUR 2,115.50" in first.fallback.text
    assert all(s.fallback is None for s in added) and cited.draft.style == "write_or_extract"


def test_the_write_style_carries_no_fallback():
    cited = cite(QUESTION, [written("The insurer will pay EUR 2,115.00.")], [ACCEPT]).draft
    assert all(s.fallback is None for s in cited.sentences) and cited.style == "write"
