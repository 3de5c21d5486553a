"""Filters the question never asked for are dropped; the ones it gives a reason for stay."""

from __future__ import annotations

import pytest

from pmsearch.services.planner.filters import drop_unasked, has_filters

GOLF = "Did the insurer accept the Golf claim?"


@pytest.mark.parametrize(
    "question,filters,dropped",
    [
        (GOLF, {"senders": ["your_email@example.com"]}, ["senders"]),
        (GOLF, {"date_from": "2023-04-01", "date_to": "2023-04-30"}, ["dates"]),
        (GOLF, {"folders": ["INBOX"]}, ["folders"]),
        (GOLF, {"mailboxes": ["shared-claims"]}, ["mailboxes"]),
        (GOLF, {"has_attachment": True}, ["has_attachment"]),
        (
            GOLF,
            {"senders": ["your_email@example.com"], "date_from": "2023-04-01", "has_attachment": False},
            ["senders", "dates", "has_attachment"],
        ),
    ],
    ids=["sender", "dates", "folder", "mailbox", "attachment", "several"],
)
def test_filters_the_question_gives_no_reason_for_are_dropped(question, filters, dropped):
    arguments, names = drop_unasked(question, {"query": "Golf claim", **filters})
    assert arguments == {"query": "Golf claim"}
    assert names == dropped


@pytest.mark.parametrize(
    "question,filters",
    [
        ("What did Sabine Roth write about the Golf claim?", {"senders": ["sabine.roth@northwind-insurance.example"]}),
        ("What did the insurer decide in April 2024?", {"date_from": "2024-04-01", "date_to": "2024-04-30"}),
        ("What came in since Monday about the claim?", {"date_from": "2024-03-11"}),
        ("What did I send from my Sent folder about the claim?", {"folders": ["Sent"]}),
        ("What is in the shared-claims mailbox about the Golf?", {"mailboxes": ["shared-claims"]}),
        ("Which message has the decision PDF?", {"has_attachment": True}),
        ("Where are the photos of the Golf?", {"has_attachment": True}),
    ],
    ids=["sender_named", "month_and_year", "since", "folder_named", "mailbox_named", "pdf", "photos"],
)
def test_filters_the_question_asks_for_stay(question, filters):
    arguments, names = drop_unasked(question, {"query": "claim", **filters})
    assert arguments == {"query": "claim", **filters}
    assert names == []


def test_of_several_senders_only_those_the_question_names_stay():
    arguments, names = drop_unasked(
        "What did Sabine write about the claim?", {"query": "claim", "senders": ["sabine.roth@northwind.example", "boss@example.com"]}
    )
    assert arguments["senders"] == ["sabine.roth@northwind.example"]
    assert names == ["senders"]


def test_arguments_without_filters_are_left_alone():
    arguments = {"query": "Golf claim", "mode": "keyword", "limit": 5}
    assert drop_unasked(GOLF, arguments) == (arguments, [])


def test_the_callers_arguments_are_not_changed_in_place():
    arguments = {"query": "Golf claim", "senders": ["your_email@example.com"]}
    drop_unasked(GOLF, arguments)
    assert arguments == {"query": "Golf claim", "senders": ["your_email@example.com"]}


@pytest.mark.parametrize(
    "arguments,expected",
    [
        ({"query": "x"}, False),
        ({"query": "x", "senders": []}, False),
        ({"query": "x", "date_to": None}, False),
        ({"query": "x", "senders": ["a@b.example"]}, True),
        ({"query": "x", "has_attachment": False}, True),
        ({"thread_id": "t1", "folders": ["INBOX"]}, True),
    ],
)
def test_has_filters(arguments, expected):
    assert has_filters(arguments) is expected


def test_a_placeholder_sender_does_not_survive_a_question_that_says_email():
    arguments, names = drop_unasked("What did the insurer say in their email about the Golf claim?", {
        "query": "Golf claim", "senders": ["your_email@example.com"],
    })
    assert names == ["senders"]


def test_invented_dates_do_not_survive_after_as_a_conjunction():
    arguments, names = drop_unasked("Did the insurer accept the Golf claim after we sent the photos?", {
        "query": "Golf claim", "date_from": "2023-04-01", "date_to": "2023-04-30",
    })
    assert names == ["dates"]
