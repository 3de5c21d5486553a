"""The sentence an answer is made from is added, word for word, when it holds details
the answer leaves out; the verifier removes it with the sentence it completes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pmsearch.services.answerer.details import detail_statements, with_details
from pmsearch.services.answerer.values import details
from pmsearch.services.verifier.service import verify
from pmsearch.shared.messages import Draft, DraftSentence, EvidenceAttachment
from tests.services.verifier.factory import message

BOOKED = message(
    "m-booked",
    "Hank, done: the Elbe room is booked for 22 May from 8:30 to 13:00, lunch for 9 from Deli Hafenblick at "
    "12:30.\n\nBest\nMia",
    subject="Re: Board meeting", sender="Mia Koch <mia@acme.example>", date=datetime(2024, 5, 3, 9, 0, tzinfo=UTC),
)
ACCEPTED = message(
    "m-accepted",
    "Dear Ms Weber,\n\nwe have completed our assessment of claim CLM-2024-55817 and are pleased to tell you that "
    "the claim is accepted.\n\nWe will pay EUR 2,115.50: the repair costs of EUR 2,340.50, less your deductible of "
    "EUR 225.00.\n\nOur decision letter is attached.",
    subject="Decision on claim CLM-2024-55817 (VW Golf)", sender="Sabine Roth <sabine.roth@northwind.example>",
    date=datetime(2024, 4, 3, 11, 0, tzinfo=UTC),
)
ADJUSTER = message(
    "m-adjuster",
    "Dear Ms Weber,\n\nthank you for your report. Your claim number is CLM-2024-55817.\nYour adjuster is Sabine "
    "Roth (sabine.roth@northwind.example, +49 40 8830 1456).",
    subject="Claim CLM-2024-55817 registered", sender="Northwind Claims <claims@northwind.example>",
)
NEWSLETTER = message(
    "m-news", "The latest rail strike cost German shippers an estimated EUR 100 million a day.",
    subject="Logistics Weekly #12", sender="Logistics Weekly <news@weekly.example>",
)


def answer(text: str, *cited: str) -> list[DraftSentence]:
    return [DraftSentence(text=text, citations=list(cited))]


DECISION = message(
    "m-decision",
    "Dear Mr Klein,\n\nwe have decided on claim HM-88213 (hail damage, Ford Transit HH-GX 310):\n\n- Bodywork: "
    "accepted. We pay EUR 3,180.00.\n- Windscreen: rejected.\n\nThe decision letter is attached.",
    subject="Decision HM-88213", sender="Harbor Mutual <claims@harbor.example>", date=datetime(2024, 4, 9, tzinfo=UTC),
)
EXPENSE = message(
    "m-expense",
    "Expense report EXP-2024-0048 by Dana Weber was approved by the line manager.\n"
    "Purpose: fuel for Sprinter M-AC 1190 Amount: EUR 121.34 Cost centre: SAL-200\n"
    "Please include it in the next payment run.",
    subject="Expense report approved", sender="Acme Expenses <expenses@acme.example>",
)
GLASS = message(
    "m-glass", "Carol, yes, let's add glass cover when the policy renews in July; I'll ask Harbor Mutual for a quote.",
    subject="Re: Van policy", sender="Frank Ortiz <frank@globex.example>",
)


def test_details_are_compared_as_values() -> None:
    assert details("booked for 22 May from 8:30 to 1 pm, lunch for 9, EUR 2,115.50") == {
        "date:5-22", "time:8:30", "time:13:00", "number:9", "amount:2115.50",
    }
    assert details("Mail sabine.roth@northwind.example or call +49 40 8830 1456 about CLM-2024-55817.") == {
        "email:sabine.roth@northwind.example", "phone:494088301456", "code:clm202455817",
    }


def test_the_sentence_the_answer_is_made_from_is_added_with_who_wrote_it() -> None:
    added = detail_statements(
        "Which room did we book for the board meeting, and who's doing the lunch?",
        answer("The Elbe room is booked for the board meeting.", "m-booked"), [BOOKED],
    )
    assert [(s.text, s.citations, s.completes) for s in added] == [(
        'Mia Koch, 3 May: "Hank, done: the Elbe room is booked for 22 May from 8:30 to 13:00, lunch for 9 from '
        'Deli Hafenblick at 12:30."', ["m-booked"], 0,
    )]


def test_the_next_sentence_comes_too_when_it_gives_an_amount_the_answer_lacks() -> None:
    added = detail_statements(
        "Did the insurer accept the Golf claim after we sent the photos?",
        answer("Yes, the insurer accepted the Golf claim after we sent the photos.", "m-accepted"), [ACCEPTED],
    )
    assert [s.text.split(': "', 1)[1][:20] for s in added] == ['we have completed ou', 'We will pay EUR 2,11']


def test_a_sentence_giving_what_the_question_asks_and_the_answer_lacks_is_chosen() -> None:
    added = detail_statements(
        "Who is handling the Golf claim at the insurer, and how do I reach her?",
        answer("Sabine Roth is handling the Golf claim at the insurer.", "m-adjuster"), [ADJUSTER],
    )
    assert len(added) == 1 and "+49 40 8830 1456" in added[0].text


def test_what_follows_a_line_ending_in_a_colon_comes_with_it() -> None:
    added = detail_statements(
        "What did Harbor Mutual decide on the Transit hail claim?",
        answer("Harbor Mutual decided on claim HM-88213 (hail damage, Ford Transit HH-GX 310):", "m-decision"), [DECISION],
    )
    text = " ".join(s.text for s in added)
    assert "EUR 3,180.00" in text and "Windscreen: rejected" in text


def test_the_next_sentence_comes_when_it_gives_the_amount_asked_though_the_answers_own_holds_none() -> None:
    question = "Expense report EXP-2024-0048: whose is it and how much?"
    added = detail_statements(question, answer("Expense report EXP-2024-0048 by Dana Weber was approved.", "m-expense"), [EXPENSE])
    assert len(added) == 1 and "EUR 121.34" in added[0].text
    # Not asked for, not added.
    unasked = "Who filed expense report EXP-2024-0048?"
    assert detail_statements(unasked, answer("Expense report EXP-2024-0048 by Dana Weber was approved.", "m-expense"), [EXPENSE]) == []


def test_the_answers_own_sentence_comes_when_it_covers_a_part_of_the_question_the_answer_left_out() -> None:
    approved = message("m-approved", "Alice, approved: buy them, no leasing.\nPlease ask Bob to plan the payment.",
                       subject="Re: Forklifts", sender="Tom Richter <tom@acme.example>", date=datetime(2024, 3, 20, tzinfo=UTC))
    added = detail_statements("Did Tom approve the two forklifts, and are we leasing them?",
                              answer("Yes, Tom approved the two forklifts.", "m-approved"), [approved])
    assert [s.text for s in added] == ['Tom Richter, 20 March: "Alice, approved: buy them, no leasing."']


def test_the_answers_own_sentence_comes_when_the_answer_borrows_its_writers_first_person() -> None:
    keys = message("m-keys", "Alice, as discussed: the spare keys for hall A and B are in the key safe in my office (top shelf).",
                   subject="Keys", sender="Jonas Hoffmann <jonas@acme.example>", date=datetime(2024, 2, 26, tzinfo=UTC))
    question = "Where are the spare keys for halls A and B?"
    added = detail_statements(question, answer("The spare keys for hall A and B are in the key safe in my office.", "m-keys"), [keys])
    assert len(added) == 1 and added[0].text.startswith("Jonas Hoffmann")
    assert detail_statements(question, answer("The spare keys for hall A and B are in the key safe.", "m-keys"), [keys]) == []


def test_a_month_named_alone_is_a_detail() -> None:
    assert details("when the policy renews in July") == {"month:7"}
    assert details("we may add it") == set()
    added = detail_statements("Are we adding glass cover to the van's policy?",
                              answer("Yes, we are adding glass cover to the van's policy.", "m-glass"), [GLASS])
    assert len(added) == 1 and "in July" in added[0].text


OFFSITE = message(
    "m-offsite",
    "Hi everyone,\n\nplease save the date: our team offsite takes place on Friday, 7 June. We will spend the day "
    "at Kloster Seeon on Lake Seeon: workshops in the morning, dinner together in the evening.\n\nAlice",
    subject="Team offsite - save the date", sender="Alice Martin <alice@acme.example>",
)


def test_the_date_of_what_the_question_is_about_comes_when_the_answer_gives_none() -> None:
    added = detail_statements("Where is the team offsite?", answer("Kloster Seeon on Lake Seeon", "m-offsite"), [OFFSITE])
    assert [s.text for s in added] == ['Alice Martin, 29 November: "please save the date: our team offsite takes place on Friday, 7 June."']
    dated = answer("The team offsite is at Kloster Seeon on 7 June.", "m-offsite")
    assert detail_statements("Where is the team offsite?", dated, [OFFSITE]) == []


KPI = message(
    "m-kpi",
    "Hi Alice,\n\nattached is the KPI report for March. Short version: revenue up, on-time delivery slightly down.",
    subject="Sales KPIs March", sender="Lukas Brandt <lukas@acme.example>",
    attachments={"kpi-report.html": "KPI report March 2024\n\nKPI | March | February\nRevenue | EUR 1.42 million | "
                 "EUR 1.31 million\nOn-time delivery | 94.1% | 95.6%\n"},
)
FLEET = message(
    "m-fleet", "Weekly report attached.", subject="Fleet report, week 15", sender="Fleet <fleet@acme.example>",
    attachments={"fleet-week-15.csv": "vehicle,plate,km_this_week\nVW Golf,M-AC 4821,538\nMercedes Sprinter,M-AC 1190,1553\n"},
)


def test_an_attachments_table_row_comes_with_its_header_when_the_body_holds_no_detail() -> None:
    said = answer("On-time delivery was slightly down.", "m-kpi")
    added = detail_statements("What did the March KPI report say about on-time delivery?", said, [KPI])
    assert [s.text for s in added] == ['Lukas Brandt, 29 November: "KPI | March | February ... On-time delivery | 94.1% | 95.6%"']
    assert len(verify(Draft(sentences=[*said, *added]), {KPI.message_id: KPI}).kept) == 2


def test_an_attachments_row_and_its_remark_both_come() -> None:
    """The row gives the figure, the remark the reason; the remark shares more words with
    the answer and alone would leave the figure out."""
    remarks = "Remarks: on-time delivery fell because of port delays in Rotterdam in week 11."
    report = KPI.attachments[0].model_copy(update={"text": KPI.attachments[0].text + remarks})
    kpi = KPI.model_copy(update={"attachments": [report]})
    said = answer("On-time delivery was slightly down because of the Rotterdam delays.", "m-kpi")
    added = detail_statements("What did the March KPI report say about on-time delivery?", said, [kpi])
    assert [s.text.split(": ", 1)[1] for s in added] == [f'"{remarks}"', '"KPI | March | February ... On-time delivery | 94.1% | 95.6%"']


def test_a_csv_attachments_lines_are_rows() -> None:
    added = detail_statements("How far did the Sprinter go in week 15?",
                              answer("The Mercedes Sprinter M-AC 1190 was in service.", "m-fleet"), [FLEET])
    assert [s.text for s in added] == [
        'Fleet, 29 November: "vehicle,plate,km_this_week ... Mercedes Sprinter,M-AC 1190,1553"'
    ]


def test_the_bodys_own_sentence_is_preferred_to_an_attachments() -> None:
    said = answer("The insurer accepted the claim.", "m-accepted")
    pdf = EvidenceAttachment(name="decision.pdf", text="Claim CLM-2024-55817 accepted: EUR 9.99.")
    letter = ACCEPTED.model_copy(update={"attachments": [pdf]})
    added = detail_statements("Did the insurer accept the Golf claim?", said, [letter])
    assert all("9.99" not in s.text for s in added) and added


def test_nothing_is_added_when_the_answer_already_holds_the_details() -> None:
    said = answer("The Elbe room is booked for 22 May from 8:30 to 13:00, lunch for 9 from Deli Hafenblick at 12:30.",
                  "m-booked")
    assert detail_statements("Which room did we book for the board meeting?", said, [BOOKED]) == []


def test_a_shared_figure_alone_does_not_make_the_answers_source() -> None:
    said = answer("The team offsite is costing per person $100.", "m-news")
    assert detail_statements("How much is the team offsite costing per person?", said, [NEWSLETTER]) == []


@pytest.mark.parametrize("text", [
    "The cost of glass cover is not mentioned in the mail.",
    "No, the room isn't booked yet.",
])
def test_an_answer_that_denies_gets_no_details(text: str) -> None:
    assert detail_statements("Which room did we book for the board meeting?", answer(text, "m-booked"), [BOOKED]) == []


def test_only_the_first_sentences_sources_are_read() -> None:
    said = [DraftSentence(text="The Golf claim was accepted.", citations=["m-accepted"]),
            DraftSentence(text="The Elbe room is booked.", citations=["m-booked"])]
    added = detail_statements("Did the insurer accept the Golf claim?", said, [ACCEPTED, BOOKED])
    assert {c for s in added for c in s.citations} == {"m-accepted"}


def test_the_added_sentences_pass_verification() -> None:
    evidence = {m.message_id: m for m in (ACCEPTED,)}
    question = "Did the insurer accept the Golf claim after we sent the photos?"
    completed = with_details(question, answer("Yes, the insurer accepted the Golf claim.", "m-accepted"),
                             list(evidence.values()))
    verdict = verify(Draft(sentences=completed), evidence, question=question)
    assert len(verdict.kept) == 3 and not verdict.removed, verdict.removed


REVIEW = message(
    "m-review",
    "On Tue, 16 Nov 2010 06:51:17 -0800 Joe Perches <joe@perches.example>\nwrote:\n"
    "> The lock in wdt_start() can go from 16 Nov 2010 on.\n\n"
    "Not before 5.6, NAK: the timer callback runs without it on SMP.\n\n"
    "---\n drivers/watchdog/wdt.c | 12 ++++++------\n 1 file changed, 6 insertions(+), 6 deletions(-)\n\n"
    "-- \nWim Van Sebroeck\nwim@iguana.example | +32 2 555 0101\n",
    subject="Re: [PATCH v2] watchdog: drop the lock", sender="Wim Van Sebroeck <wim@iguana.example>",
    date=datetime(2010, 11, 17, 9, 0, tzinfo=UTC),
)


@pytest.mark.parametrize("furniture", ["Joe Perches", "drivers/watchdog/wdt.c", "file changed", "+32 2 555 0101", "16 Nov 2010"])
def test_no_attribution_diffstat_signature_or_quote_is_copied_as_a_detail(furniture) -> None:
    added = detail_statements(
        "What did Wim say about dropping the lock, and since when?",
        answer("Wim rejected dropping the lock in the watchdog patch.", "m-review"), [REVIEW],
    )
    assert all(furniture not in s.text for s in added)


def test_a_statement_of_a_sender_whose_name_holds_marks_is_kept_by_the_verifier() -> None:
    """A quote mark or bracket in a display name would end the statement's quote."""
    odd = BOOKED.model_copy(update={"sender": 'Mia "Ops" [Koch] <mia@acme.example>'})
    added = detail_statements(
        "Which room did we book for the board meeting, and who's doing the lunch?",
        answer("The Elbe room is booked for the board meeting.", "m-booked"), [odd],
    )
    assert added and added[0].text.startswith("Mia Ops Koch, 3 May:")
    verdict = verify(Draft(sentences=[*answer("The Elbe room is booked for 22 May.", "m-booked"), *added]),
                     {"m-booked": odd})
    assert len(verdict.kept) == 2, verdict.removed


def test_a_sentence_with_brackets_is_not_copied() -> None:
    """"[0,480]" in a copied sentence would read as a citation marker."""
    bracketed = message(
        "m-stat", "The device ID is [0,480] and the inode number is -9165900813172145728.",
        subject="stat example", sender="Konstantin <k@example.org>", date=datetime(2024, 9, 13, tzinfo=UTC),
    )
    said = answer("It printed a negative inode number.", "m-stat")
    added = detail_statements("What inode number did the example print?", said, [bracketed])
    assert added == []


def test_a_page_without_full_stops_is_not_copied_as_a_sentence() -> None:
    stuffed = message(
        "m-stuffed", "the insurer accepted the claim and will pay " * 200, subject="Claim",
        sender="Desk <desk@claims-update.example>", date=datetime(2024, 4, 3, tzinfo=UTC),
    )
    said = answer("The insurer accepted the claim.", "m-stuffed")
    assert detail_statements("Did the insurer accept the claim and when will it pay?", said, [stuffed]) == []
