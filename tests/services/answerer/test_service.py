from datetime import datetime, timezone

from services.answerer.schemas import CitedSentence
from services.answerer.service import rank_evidence
from shared.messages import EvidenceMessage


def _msg(mid: str, subject: str, body: str) -> EvidenceMessage:
    return EvidenceMessage(
        message_id=mid, tenant_id="t", thread_id="th", mailbox="m", sender="s", date=datetime(2024, 1, 1, tzinfo=timezone.utc),
        subject=subject, body=body,
    )


def test_sentence_carries_its_quote_for_the_verifier():
    s = CitedSentence(citations=["m1"], quote="“the claim is accepted”", text="The insurer accepted the claim.")
    assert s.sentence() == 'The insurer accepted the claim: "the claim is accepted".'


def test_sentence_without_quote_is_its_text():
    assert CitedSentence(citations=["m1"], quote=" ", text="Paid in April.").sentence() == "Paid in April."


def test_evidence_sharing_the_questions_words_comes_first():
    a = _msg("a", "Lunch", "pizza on friday")
    b = _msg("b", "Decision on claim", "the insurer accepted the Golf claim")
    ranked = rank_evidence("Did the insurer accept the Golf claim?", [a, b])
    assert [m.message_id for m in ranked] == ["b", "a"]


def test_ties_keep_the_search_order():
    a, b = _msg("a", "x", "claim"), _msg("b", "y", "claim")
    assert [m.message_id for m in rank_evidence("claim", [a, b])] == ["a", "b"]


def test_coverage_is_the_best_share_of_question_words_one_message_mentions():
    from services.answerer.service import coverage

    golf = _msg("a", "Decision on claim", "the insurer accepted the Golf claim")
    assert coverage("Did the insurer accept the Golf claim?", [golf]) == 1.0
    assert coverage("What is the budget of our moon base?", [golf]) == 0.0
