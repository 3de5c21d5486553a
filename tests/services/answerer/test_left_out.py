"""Another message's sentence for the part of the question the answer leaves out."""

from __future__ import annotations

from datetime import UTC, datetime

from pmsearch.services.answerer.left_out import left_out_statement, with_left_out
from pmsearch.services.verifier.service import verify
from pmsearch.shared.messages import Draft, DraftSentence
from tests.services.verifier.factory import message

QUESTION = "What is invoice INV-2024-0173 for, and has it been paid?"
INVOICE = message(
    "m-invoice",
    "Dear Mr Keller,\n\nplease find attached invoice INV-2024-0173 for 12 ErgoPro 300 office chairs (order 44817).\n"
    "Total: EUR 4,870.00 including 19% VAT. Payment due: 15 April 2024.",
    subject="Invoice for order 44817 (office chairs)", sender="Initech Billing <billing@initech.example>",
    date=datetime(2024, 3, 18, tzinfo=UTC),
)
PAID = message(
    "m-paid",
    "Hi Alice, the chairs invoice was paid today by bank transfer, EUR 4,870.00. Bob",
    subject="Re: Initech office chairs - paid?", sender="Bob Keller <bob@acme.example>",
    date=datetime(2024, 4, 10, tzinfo=UTC),
)
DESKS_PAID = message(
    "m-desks", "The desks invoice was paid on Monday.", subject="Re: desks", sender="Bob Keller <bob@acme.example>",
)
ANSWER = [DraftSentence(text="Invoice INV-2024-0173 is for 12 ErgoPro 300 office chairs.", citations=["m-invoice"])]


def test_another_messages_sentence_answers_the_part_the_answer_leaves_out() -> None:
    (added,) = left_out_statement(QUESTION, ANSWER, [INVOICE, PAID])
    assert added.citations == ["m-paid"] and added.completes == 0
    assert added.text == 'Bob Keller, 10 April: "Hi Alice, the chairs invoice was paid today by bank transfer, EUR 4,870.00."'


def test_a_sentence_about_something_else_is_not_added() -> None:
    assert left_out_statement(QUESTION, ANSWER, [INVOICE, DESKS_PAID]) == []


def test_each_item_of_a_list_is_a_sentence_of_its_own() -> None:
    """"Forklift training" in one item and "new ... start" in another do not make one
    sentence about a new app's training."""
    app = [DraftSentence(text="The new expense app is called Spendly, starting from June.", citations=["m-app"])]
    standup = message(
        "m-standup",
        "Status:\n- Forklift training certificates renewed\n- Quarterly stock count: aisles 1-6 done\n"
        "- Two new pickers start Monday",
        subject="Daily stand-up", sender="Globex Ops Bot <bot@globex.example>",
    )
    question = "What's the new expense app called and when is the training?"
    assert left_out_statement(question, app, [standup]) == []


def test_nothing_is_added_when_the_answer_touches_every_part() -> None:
    said = [DraftSentence(text="Invoice INV-2024-0173 for the office chairs was not paid yet.", citations=["m-invoice"])]
    assert left_out_statement(QUESTION, said, [INVOICE, PAID]) == []


def test_a_one_part_question_gets_nothing() -> None:
    assert left_out_statement("What is invoice INV-2024-0173 for?", ANSWER, [INVOICE, PAID]) == []


def test_the_added_sentence_is_kept_though_its_message_does_not_name_the_code() -> None:
    """The sentence it completes names INV-2024-0173; it stays with that one."""
    evidence = {m.message_id: m for m in (INVOICE, PAID)}
    verdict = verify(Draft(sentences=with_left_out(QUESTION, ANSWER, [INVOICE, PAID])), evidence, question=QUESTION)
    assert [c.message_id for s in verdict.kept for c in s.citations] == ["m-invoice", "m-paid"], verdict.removed


def test_the_same_sentence_alone_is_off_the_question() -> None:
    evidence = {m.message_id: m for m in (INVOICE, PAID)}
    alone = [DraftSentence(text="The chairs invoice was paid today by bank transfer.", citations=["m-paid"])]
    verdict = verify(Draft(sentences=alone), evidence, question=QUESTION)
    assert not verdict.kept and verdict.removed[0].reason == "off_question"
