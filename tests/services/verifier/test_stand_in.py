"""A written sentence's fallback, the mail's sentence it was made from, in its place
(answer style write_or_extract; services/verifier/service.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from pmsearch.services.verifier.service import verify
from pmsearch.shared.messages import Draft, DraftSentence, EvidenceMessage, SourceSentence

ACCEPT = EvidenceMessage(
    message_id="m-accept", tenant_id="acme", thread_id="t-golf", mailbox="alice",
    sender="Sabine Roth <sabine@northwind.example>", date=datetime(2024, 4, 3, tzinfo=UTC),
    subject="Decision on claim CLM-2024-55817",
    body="Dear Mr Keller,\n\nthank you for the photos of the Golf. The claim is accepted after review. "
    "We will pay EUR 2,115.50 to your account within ten days.\n\nKind regards,\nSabine Roth",
)
EVIDENCE = {ACCEPT.message_id: ACCEPT}
QUESTION = "How much will the insurer pay for the Golf claim?"
PAY = SourceSentence(
    text='Sabine Roth, 3 April: "We will pay EUR 2,115.50 to your account within ten days."', citations=["m-accept"]
)


def draft(*sentences: DraftSentence) -> Draft:
    return Draft(sentences=list(sentences), style="write_or_extract")


def written(text: str, fallback: SourceSentence | None = PAY, **extra) -> DraftSentence:
    return DraftSentence(text=text, citations=["m-accept"], fallback=fallback, **extra)


def test_a_sentence_removed_for_its_claim_gives_way_to_its_fallback():
    verdict = verify(draft(written("The insurer will pay EUR 2,115.00.")), EVIDENCE, question=QUESTION)
    assert [s.text for s in verdict.kept] == [PAY.text]
    assert [(r.reason, r.replaced) for r in verdict.removed] == [("figure_not_found", True)]


def test_a_kept_sentence_with_a_word_its_sources_lack_gives_way_to_its_fallback():
    verdict = verify(draft(written("Sabine Roth will gladly pay EUR 2,115.50 within ten days.")), EVIDENCE, question=QUESTION)
    assert [s.text for s in verdict.kept] == [PAY.text]
    assert [(r.reason, r.offending, r.replaced) for r in verdict.removed] == [("unsupported_claim", "gladly", True)]


def test_a_sentence_its_sources_hold_word_for_word_stays():
    verdict = verify(draft(written("We will pay EUR 2,115.50 to your account.")), EVIDENCE, question=QUESTION)
    assert [s.text for s in verdict.kept] == ["We will pay EUR 2,115.50 to your account."] and not verdict.removed


def test_a_sentence_about_another_matter_is_removed_not_replaced():
    question = "How much will the insurer pay for claim CLM-2024-99999?"
    verdict = verify(draft(written("The insurer will pay EUR 2,115.00.")), EVIDENCE, question=question)
    assert not verdict.kept and [(r.reason, r.replaced) for r in verdict.removed] == [("off_question", False)]


def test_a_fallback_that_fails_a_rule_itself_leaves_the_written_sentence_removed():
    forged = SourceSentence(text='Sabine Roth, 3 April: "We will pay EUR 9,999.00."', citations=["m-accept"])
    verdict = verify(draft(written("The insurer will pay EUR 2,115.00.", forged)), EVIDENCE, question=QUESTION)
    assert not verdict.kept and [(r.reason, r.replaced) for r in verdict.removed] == [("figure_not_found", False)]


def test_a_fallback_stands_in_once_for_its_unit():
    verdict = verify(
        draft(written("The insurer will pay EUR 2,115.00. It will pay EUR 2,115.01 soon.")), EVIDENCE, question=QUESTION
    )
    assert [s.text for s in verdict.kept] == [PAY.text]
    assert [(r.reason, r.replaced) for r in verdict.removed] == [("figure_not_found", True), ("figure_not_found", False)]


def test_a_sentence_resting_on_a_replaced_answer_stays_with_it():
    verdict = verify(
        draft(written("The insurer will pay EUR 2,115.00."), written("The claim is accepted after review.", None, follows=0)),
        EVIDENCE, question=QUESTION,
    )
    assert [s.text for s in verdict.kept] == [PAY.text, "The claim is accepted after review."]
