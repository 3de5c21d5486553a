"""A message's own words (pmsearch/shared/text/mail.py): without quotes, forwards, signatures,
sign-offs and greetings, in every attribution language the corpora use."""

from __future__ import annotations

import pytest

from pmsearch.shared.text.mail import own_replies, own_text, sender_name


@pytest.mark.parametrize(
    "body,kept,gone",
    [
        (
            "We accept the claim.\n\nOn Mon, 11 Mar 2024 at 17:05, Dana Weber wrote:\n> We sent the photos.\n> Regards",
            "We accept the claim.", "photos",
        ),
        ("We accept the claim.\n\nAm 11.03.2024 um 17:05 schrieb Dana Weber:\nDie Fotos anbei.", "We accept the claim.", "Fotos"),
        ("We accept the claim.\n\n-----Original Message-----\nFrom: Dana\nThe photos.", "We accept the claim.", "photos"),
        ("We accept the claim.\n\nFrom: Dana Weber\nSent: Monday\nThe photos.", "We accept the claim.", "photos"),
        ("We accept the claim.\n> quoted line\nPayment follows.", "Payment follows.", "quoted line"),
        ("We accept the claim.\n-- \nSabine Roth\n+49 40 8830 1456", "We accept the claim.", "8830"),
        ("We accept the claim.\n\nKind regards,\nSabine Roth\nClaims adjuster", "We accept the claim.", "adjuster"),
        ("Dear Ms Weber,\n\nWe accept the claim.", "We accept the claim.", "Dear"),
        ("Hi team,\n\nThe review is on Thursday.\n\nTom\n", "The review is on Thursday.", "Tom"),
    ],
    ids=["on_wrote", "schrieb", "original_message", "outlook_header", "quoted_lines", "signature", "sign_off", "greeting",
         "name_alone"],
)
def test_own_text_keeps_the_messages_own_words_only(body, kept, gone):
    text = own_text(body)
    assert kept in text
    assert gone not in text


def test_a_senders_name_is_read_without_its_address_or_quote_marks():
    assert sender_name("Sabine Roth <sabine.roth@northwind.example>") == "Sabine Roth"
    assert sender_name('"Lair, Jean" <jean@example.org>') == "Lair, Jean"
    assert sender_name("<noreply@example.org>") == "<noreply@example.org>"


def test_own_replies_gives_each_stretch_with_what_it_quotes_and_who_wrote_it():
    body = ("Hi Tom,\n\nOn Mon, 4 Mar 2024, Sabine Roth wrote:\n> Did the v3 move the reset?\n> Please check.\n\n"
            "Yes, it did.\n\n> And the exclusive get?\n\nAlso done.\n\n-- \nPhilipp\n")
    assert own_replies(body) == (
        ("quoted", "Did the v3 move the reset?\nPlease check.", "Sabine Roth"),
        ("own", "Yes, it did.", ""),
        ("quoted", "And the exclusive get?", ""),  # no attribution above it names one
        ("own", "Also done.", ""),
    )
