"""When the mail disagrees with the answer, the other statements are added word for word."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pmsearch.services.answerer.disagreement import MAX_ADDED, other_statements, with_other_statements
from pmsearch.services.answerer.values import amounts, dates
from pmsearch.services.verifier.service import verify
from pmsearch.shared.messages import Draft, DraftSentence, EvidenceMessage


def msg(mid: str, body: str, *, sender: str, day: int, subject: str, thread: str | None = None) -> EvidenceMessage:
    return EvidenceMessage(
        message_id=mid, tenant_id="acme", thread_id=thread or f"t-{mid}", mailbox="alice", sender=sender,
        date=datetime(2024, 5, day, 10, 0, tzinfo=UTC), subject=subject, body=body, attachments=[],
    )


PRIYA = msg(
    "m-priya", "Hi all,\n\nthe Q2 quarterly review has been moved to Tuesday, 14 May, 10:00-12:00, in the Isar\n"
    "meeting room. Please send your slides to me by Monday evening.\n\nThanks\nPriya",
    sender="Priya Nair <priya@acme.example>", day=2, subject="Q2 quarterly review moved to Tuesday 14 May",
)
TOM = msg(
    "m-tom", "Hi team,\n\nquick note: the quarterly review will take place on Thursday, 16 May at 10:00 in the Isar "
    "room. Keep the presentations short.\n\nTom",
    sender="Tom Richter <tom@acme.example>", day=3, subject="Quarterly review: Thursday 16 May",
)
ALICE = msg(
    "m-alice", "Hi Tom,\n\nPriya said Tuesday, 14 May for the quarterly review. Which date is right, 14 or 16 May?",
    sender="Alice Martin <alice@acme.example>", day=3, subject="Re: Quarterly review: Thursday 16 May", thread="t-m-tom",
)
LUNCH = msg(
    "m-lunch", "Lunch & learn on Friday, 17 May at 12:00 in the canteen.",
    sender="Carol <carol@acme.example>", day=6, subject="Lunch & learn",
)
INVOICE = msg(
    "m-invoice", "Hello Bob,\n\nour invoice FP-3391 for the brochures comes to EUR 1,250.00 including VAT.",
    sender="Sven Olsen <sven@fabrikam.example>", day=4, subject="Invoice FP-3391 - brochures",
)
HEADS_UP = msg(
    "m-heads-up", "Hi Bob,\n\nheads-up on the Fabrikam brochure invoice FP-3391: it should be EUR 1,520.00, not less. "
    "We ordered a second run of 1,000 brochures.",
    sender="Lukas Brandt <lukas@acme.example>", day=4, subject="Fabrikam brochures - amount",
)
REVIEW = "When is the Q2 quarterly review?"
ON_14 = DraftSentence(text="The Q2 quarterly review is on Tuesday, 14 May.", citations=["m-priya"])


def test_another_date_for_the_same_meeting_is_added_with_its_sender_and_day() -> None:
    added = other_statements(REVIEW, [ON_14], [PRIYA, TOM, ALICE, LUNCH])
    assert added == [
        DraftSentence(
            text='Tom Richter, 3 May: "quick note: the quarterly review will take place on Thursday, 16 May at 10:00 '
            'in the Isar room."',
            citations=["m-tom"],
        )
    ]


def test_another_amount_for_the_invoice_the_question_names_is_added() -> None:
    answer = [DraftSentence(text="Invoice FP-3391 comes to EUR 1,250.00.", citations=["m-invoice"])]
    added = other_statements("How much is Fabrikam's invoice FP-3391?", answer, [INVOICE, HEADS_UP])
    assert [(s.citations, "EUR 1,520.00" in s.text) for s in added] == [(["m-heads-up"], True)]


def test_the_added_statement_passes_verification() -> None:
    evidence = {m.message_id: m for m in (PRIYA, TOM, ALICE, LUNCH)}
    added = other_statements(REVIEW, [ON_14], list(evidence.values()))
    verdict = verify(Draft(sentences=[ON_14, *added]), evidence, question=REVIEW)
    assert [s.citations[0].message_id for s in verdict.kept] == ["m-priya", "m-tom"], verdict.removed


def test_the_models_own_wording_of_the_other_version_gives_way_to_the_messages() -> None:
    own = DraftSentence(text="The latest message says that the right date is Thursday, 16 May.", citations=["m-tom"])
    completed = with_other_statements(REVIEW, [ON_14, own], [PRIYA, TOM])
    assert [s.citations for s in completed] == [["m-priya"], ["m-tom"]]
    assert completed[1].text.startswith('Tom Richter, 3 May: "quick note')


def test_a_later_sentence_about_something_else_stays() -> None:
    room = DraftSentence(text="It is in the Isar room.", citations=["m-tom"])
    completed = with_other_statements(REVIEW, [ON_14, room], [PRIYA, TOM])
    assert [s.text for s in completed][:2] == [ON_14.text, room.text] and len(completed) == 3


def test_nothing_is_added_when_the_other_message_gives_the_same_date() -> None:
    on_16 = DraftSentence(text="The quarterly review is on Thursday, 16 May.", citations=["m-priya"])
    assert other_statements(REVIEW, [on_16], [PRIYA, TOM]) == []


def test_a_message_about_something_else_adds_nothing() -> None:
    assert other_statements(REVIEW, [ON_14], [PRIYA, LUNCH]) == []


def test_a_sentence_sharing_only_some_of_the_questions_words_is_about_something_else() -> None:
    answer = [DraftSentence(text="The moving boxes get delivered on 27 May.", citations=["m-priya"])]
    quote = msg("m-quote", "For moving the office on 1-2 June we quote EUR 7,800.00, including 300 moving boxes.",
                sender="Hanseatic Movers <quotes@hanseatic.example>", day=4, subject="Quote")
    assert other_statements("When do the moving boxes get delivered?", answer, [quote]) == []


def test_a_question_in_the_mail_states_nothing() -> None:
    assert other_statements(REVIEW, [ON_14], [PRIYA, ALICE]) == []


def test_a_question_that_asks_for_no_date_or_amount_gets_nothing_added() -> None:
    assert other_statements("Which room is the Q2 quarterly review in?", [ON_14], [PRIYA, TOM]) == []


def test_an_answer_without_a_date_is_not_contradicted() -> None:
    vague = DraftSentence(text="The Q2 quarterly review was moved.", citations=["m-priya"])
    assert other_statements(REVIEW, [vague], [PRIYA, TOM]) == []


@pytest.mark.parametrize(
    ("subject", "added"), [("Initech order", True), ("Printing order", False)], ids=["named", "not_named"]
)
def test_a_name_the_question_gives_must_be_in_the_statement_or_its_subject(subject, added) -> None:
    answer = [DraftSentence(text="The April order from Initech cost EUR 3,150.00.", citations=["m-invoice"])]
    other = msg("m-other", "The April order cost EUR 1,520.00 in the end.", sender="Lukas <lukas@acme.example>",
                day=6, subject=subject)
    question = "How much did the April order from Initech cost?"
    assert bool(other_statements(question, answer, [INVOICE, other])) is added


def test_at_most_a_few_other_versions_are_added() -> None:
    others = [
        msg(f"m-{d}", f"The quarterly review will take place on {d} May.", sender="X <x@acme.example>", day=4,
            subject="Quarterly review")
        for d in (15, 17, 20, 21)
    ]
    assert len(other_statements(REVIEW, [ON_14], [PRIYA, *others])) == MAX_ADDED


@pytest.mark.parametrize(
    "text,expected",
    [
        ("EUR 1,250.00 including VAT", {"1250.00"}),
        ("€1.250,00", {"1250.00"}),
        ("EUR2,340.50", {"2340.50"}),
        ("costs 3 150.00 EUR", {"3150.00"}),
        ("EUR 345 per child", {"345.00"}),
        ("1,000 brochures", set()),
        ("on 14.05.2024", set()),
    ],
)
def test_amounts_meet_however_they_are_written(text, expected) -> None:
    assert amounts(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Tuesday, 14 May", {(5, 14)}),
        ("May 16th", {(5, 16)}),
        ("2024-05-14", {(5, 14)}),
        ("14.05.2024", {(5, 14)}),
        ("the 14th", set()),
    ],
)
def test_dates_meet_however_they_are_written(text, expected) -> None:
    assert dates(text) == expected
