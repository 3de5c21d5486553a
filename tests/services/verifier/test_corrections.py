"""Messages their senders corrected, and sentences that stand only on them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pmsearch.services.verifier.corrections import corrected_by
from pmsearch.services.verifier.service import verify
from pmsearch.shared.messages import Draft, DraftSentence
from tests.services.verifier.factory import message

NEWS = "newsletter@logisticsweekly.example"
MORNING = datetime(2024, 3, 22, 7, 0, tzinfo=UTC)
FIRST = message("m00000000c001", "Logistics Weekly #12. Read the full issue online: https://logisticsweekly.example/issues/12",
                subject="Logistics Weekly #12: rail freight strikes", sender=f"Logistics Weekly <{NEWS}>", date=MORNING)
RESENT = message("m00000000c002", "We are resending this issue because the link in this morning's email was broken. "
                 "Read the full issue online: https://logisticsweekly.example/issues/12-2024",
                 subject="Logistics Weekly #12 (corrected link): rail freight strikes",
                 sender=f"Logistics Weekly <{NEWS}>", date=MORNING + timedelta(hours=3))


def _evidence(*messages):
    return {m.message_id: m for m in messages}


def _verify(question: str, sentence: str, cited: str, *messages):
    draft = Draft(sentences=[DraftSentence(text=sentence, citations=[cited])])
    return verify(draft, _evidence(*messages), question=question)


def test_a_later_message_of_the_same_sender_marked_corrected_corrects_the_first() -> None:
    assert corrected_by(_evidence(FIRST, RESENT)) == {FIRST.message_id: RESENT.message_id}


def test_a_sender_saying_their_earlier_message_was_wrong_corrects_it() -> None:
    first = message("m00000000c003", "Our offsite is at Gut Sonnenhausen near Glonn on 7 June.",
                    subject="Team offsite", sender="alice@acme.example", date=MORNING)
    again = message("m00000000c004", "Our offsite is at Kloster Seeon on 7 June. Sorry, my earlier message named the "
                    "wrong venue.", subject="Team offsite", sender="alice@acme.example", date=MORNING + timedelta(hours=2))
    assert corrected_by(_evidence(first, again)) == {first.message_id: again.message_id}


def test_a_reply_that_inherits_a_corrected_subject_corrects_nothing() -> None:
    reply = message("m00000000c005", "Thanks, I will share the link with the team.",
                    subject=f"Re: {RESENT.subject}", sender=f"Logistics Weekly <{NEWS}>", date=MORNING + timedelta(hours=5))
    assert corrected_by(_evidence(RESENT, reply)) == {}


def test_a_follow_up_that_reports_something_broken_corrects_nothing() -> None:
    first = message("m00000000c006", "Delivery CF-2207 arrived with a damaged pallet.",
                    subject="Damaged delivery CF-2207", sender="maria@contoso.example", date=MORNING)
    later = message("m00000000c007", "Update: 42 tiles on the pallet are broken; photos attached.",
                    subject="Re: Damaged delivery CF-2207", sender="maria@contoso.example", date=MORNING + timedelta(days=1))
    assert corrected_by(_evidence(first, later)) == {}


def test_another_sender_or_a_month_later_corrects_nothing() -> None:
    other = RESENT.model_copy(update={"sender": "someone@else.example"})
    late = RESENT.model_copy(update={"date": MORNING + timedelta(days=30)})
    assert corrected_by(_evidence(FIRST, other)) == {}
    assert corrected_by(_evidence(FIRST, late)) == {}


def test_a_forged_correction_from_an_unauthenticated_sender_supersedes_nothing() -> None:
    # The same From address, forged: the MTA authenticated the first mail, not this one,
    # or found that this one failed.
    authentic = FIRST.model_copy(update={"sender_auth": "pass"})
    unchecked = RESENT.model_copy(update={"sender_auth": "none"})
    failed = RESENT.model_copy(update={"sender_auth": "fail"})
    assert corrected_by(_evidence(authentic, unchecked)) == {}
    assert corrected_by(_evidence(FIRST, failed)) == {}
    question = "Can you give me the link to Logistics Weekly #12?"
    kept = _verify(question, "The link is https://logisticsweekly.example/issues/12", FIRST.message_id, authentic, unchecked)
    assert [s.text for s in kept.kept] == ["The link is https://logisticsweekly.example/issues/12"]


def test_an_authenticated_sender_corrects_as_before() -> None:
    both = [m.model_copy(update={"sender_auth": "pass"}) for m in (FIRST, RESENT)]
    assert corrected_by(_evidence(*both)) == {FIRST.message_id: RESENT.message_id}


def test_the_old_link_from_the_corrected_message_is_superseded() -> None:
    question = "Can you give me the working link to Logistics Weekly #12?"
    old = _verify(question, "The link is https://logisticsweekly.example/issues/12", FIRST.message_id, FIRST, RESENT)
    new = _verify(question, "The link is https://logisticsweekly.example/issues/12-2024", RESENT.message_id, FIRST, RESENT)
    assert [(r.reason, r.offending) for r in old.removed] == [
        ("superseded", "https://logisticsweekly.example/issues/12")
    ]
    assert [s.text for s in new.kept] == ["The link is https://logisticsweekly.example/issues/12-2024"]


def test_what_the_correction_repeats_still_stands_on_the_first_message() -> None:
    verdict = _verify("Which issue of Logistics Weekly is about rail freight?",
                      "Logistics Weekly #12 is about rail freight strikes.", FIRST.message_id, FIRST, RESENT)
    assert [s.text for s in verdict.kept] == ["Logistics Weekly #12 is about rail freight strikes."]
