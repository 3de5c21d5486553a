"""Citations by code: each sentence goes to the messages that state it, whatever the
model pointed at."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pmsearch.services.answerer.attribution import (
    MAX_SOURCES,
    attribute,
    echoes_header,
    figure_keys,
    held,
    quotes,
    sentence_figures,
)
from pmsearch.shared.messages import EvidenceAttachment, EvidenceMessage


def msg(mid: str, body: str, *, subject: str = "Claim", attachments: list[EvidenceAttachment] | None = None) -> EvidenceMessage:
    return EvidenceMessage(
        message_id=mid, tenant_id="acme", thread_id="t1", mailbox="alice", sender="Someone <someone@example.com>",
        date=datetime(2024, 3, 1, tzinfo=UTC), subject=subject, body=body, attachments=attachments or [],
    )


PHOTOS = msg("photos", "Attached are three photos of the damage to the VW Golf, taken this morning.")
ACCEPT = msg("accept", "Northwind accepts the claim and pays EUR 2,115.50 by 12 April.")
LUNCH = msg("lunch", "Pizza on Friday for the whole team.")


def test_the_message_that_states_the_sentence_wins_over_the_models_choice():
    assert attribute("Northwind accepts the claim and pays EUR 2,115.50.", [PHOTOS, ACCEPT, LUNCH], preferred=["photos"]) == ["accept"]


def test_a_shared_figure_outweighs_shared_words():
    words = msg("words", "The insurer pays the claim soon.")
    figure = msg("figure", "Transfer of 2115.50 booked.")
    assert attribute("The insurer pays 2,115.50.", [words, figure])[0] == "figure"


@pytest.mark.parametrize(
    "sentence,source,meets",
    [
        ("EUR 2,115.50", "Transfer: 2.115,50 €", True),
        ("EUR 2115.00", "EUR 2,115", True),
        ("mail sabine.roth@northwind.example today", "Sabine.Roth@northwind.example", True),
        ("see https://example.com/x.", "link: https://example.com/x", True),
        ("claim CLM-2024-55817", "your claim CLM-2024-55817 is settled", True),
        ("on April 9th", "the 9 April meeting", True),
        ("until 19 April 2024", "until 2024-04-19", True),
        ("until 19 April 2024", "until 19 March 2024", False),
        ("$100", "EUR 100", False),
    ],
)
def test_a_figure_meets_its_source_as_the_verifier_reads_it(sentence, source, meets):
    wanted = sentence_figures(sentence)
    assert wanted and (held(wanted, figure_keys(source)) == len(wanted)) is meets


def test_a_date_goes_to_the_message_that_names_that_day_not_one_sharing_its_numbers():
    notes = msg("notes", "Ops meeting 19 March 2024. The claims desk gets photos within 24 hours.")
    rota = msg("rota", "While I am on holiday from 8 to 19 April, Alice looks after the claims desk.")
    assert attribute("Until 19 April 2024, Alice looks after the claims desk.", [notes, rota]) == ["rota"]


def test_the_models_choice_wins_a_tie():
    a = msg("a", "The Golf claim was accepted.")
    b = msg("b", "The Golf claim was accepted.")
    assert attribute("The Golf claim was accepted.", [a, b], preferred=["b"]) == ["b"]
    assert attribute("The Golf claim was accepted.", [a, b]) == ["a"]


def test_a_sentence_nothing_supports_gets_no_sources():
    assert attribute("The moon base budget is unknown.", [PHOTOS, LUNCH]) == []


def test_a_stitched_sentence_rests_on_its_best_single_source():
    sent = msg("sent", "We sent three photos on 13 March.")
    sources = attribute("We sent three photos on 13 March and Northwind pays EUR 2,115.50.", [sent, ACCEPT, LUNCH])
    assert len(sources) == 1  # against it the other message's figures are missing


def test_no_more_than_max_sources():
    many = [msg(f"m{i}", f"Item {i} costs EUR {i}00.00 and code X{i}.") for i in range(1, 6)]
    sentence = "Items cost EUR 100.00, EUR 200.00, EUR 300.00, EUR 400.00 and EUR 500.00."
    assert len(attribute(sentence, many)) == MAX_SOURCES


def test_a_quoted_copy_of_a_message_does_not_count_for_the_reply_that_quotes_it():
    reply = msg(
        "reply",
        "Thanks, noted.\n\nOn Wed, 3 Apr 2024, Sabine Roth wrote:\n> Northwind accepts the claim and pays EUR 2,115.50 by 12 April.",
    )
    assert attribute("Northwind accepts the claim and pays EUR 2,115.50.", [reply, ACCEPT], preferred=["reply"]) == ["accept"]


def test_attachment_text_counts():
    decision = EvidenceAttachment(name="decision.pdf", text="Decision: ACCEPTED. Payout EUR 2,115.50.")
    letter = msg("letter", "See attached.", attachments=[decision])
    assert attribute("The payout is EUR 2,115.50.", [PHOTOS, letter]) == ["letter"]


def test_a_quoted_phrase_goes_to_the_message_that_holds_it_even_when_another_shares_as_many_words():
    """Both messages share "claim", "registered" and "under"; only one holds the quote.
    The verifier keeps a quote only when a cited message holds it."""
    report = msg("report", "We report damage to a company car, insured under our fleet policy. Vehicle first registered 2021.",
                 subject="Claim report")
    registered = msg("registered", "Thank you for your report. Your claim has been registered under claim number CLM-1.")
    sentence = 'The mail says "Your claim has been registered under".'
    assert attribute(sentence, [report, registered], preferred=["report"]) == ["registered"]


@pytest.mark.parametrize(
    "text,expected",
    [
        ('It says "we accept  the Claim".', {"we accept the claim"}),
        ("It says “we accept” and „wir zahlen“.", {"we accept", "wir zahlen"}),
        ('A "x" is too short.', set()),
        ("No quotes at all.", set()),
    ],
)
def test_quotes_are_folded(text, expected):
    assert quotes(text) == expected


def test_a_date_goes_to_the_message_sent_that_day():
    asked = msg("asked", "Please send us photos of the damaged Golf.")
    sent = msg("sent", "Attached are the photos of the damaged Golf.").model_copy(
        update={"date": datetime(2024, 3, 13, 16, 20, tzinfo=UTC)}
    )
    assert attribute("We sent the photos of the damaged Golf on 2024-03-13.", [asked, sent], preferred=["asked"]) == ["sent"]


def test_a_tie_goes_to_the_message_of_the_person_the_sentence_names():
    """Carol's question names Frank as much as his answer does; his answer says what he chose."""
    asked = msg("asked", "Frank, which option do you prefer for the hosting renewal, 12 or 24 months?").model_copy(
        update={"sender": "Carol Jensen <carol@globex.example>"}
    )
    chose = msg("chose", "24 months, please. The hosting renewal can wait no longer.").model_copy(
        update={"sender": "Frank Li <frank@globex.example>"}
    )
    assert attribute("Frank went for the 24 months hosting renewal.", [asked, chose], preferred=["asked"]) == ["chose"]


def test_an_organisation_is_no_person_who_wrote():
    """"Northwind" in the sentence does not make the insurer's mailbox the one that said it."""
    decision = msg("decision", "We pay less because of your deductible.").model_copy(
        update={"sender": "Sabine Roth <sabine.roth@northwind.example>"}
    )
    desk = msg("desk", "We pay less because of your deductible.").model_copy(
        update={"sender": "Northwind Claims <claims@northwind.example>"}
    )
    assert attribute("Northwind pays less because of the deductible.", [decision, desk], preferred=["decision"]) == ["decision"]


@pytest.mark.parametrize(
    "sentence,echo",
    [
        ("Someone, Claim CLM-2024-55817", True),
        ("Claim CLM-2024-55817, 1 March 2024", True),
        ("Claim CLM-2024-55817 was accepted.", False),  # "accepted" is the body's
        ("Claim CLM-2024-55818", False),  # another claim
        ("2024-03-01 Fri, Someone", True),  # the date as a passage's header line shows it
    ],
)
def test_a_sentence_of_nothing_but_the_header_is_an_echo(sentence, echo):
    header = msg("h", "Accepted: we pay EUR 2,115.50.", subject="Claim CLM-2024-55817")
    assert echoes_header(sentence, header) is echo


def test_a_word_few_messages_hold_outweighs_words_they_all_hold():
    """"Accepted" says which message; "Golf", "claim" and "insurer" are in all of them."""
    photos = msg("photos", "The insurer needs photos of the Golf for the claim.")
    reply = msg("reply", "Here are the photos of the Golf for the insurer's claim.")
    accepted = msg("accepted", "The insurer has accepted the Golf claim.")
    sentence = "Yes, the insurer accepted the Golf claim after we sent the photos."
    assert attribute(sentence, [photos, reply, accepted], preferred=["photos"]) == ["accepted"]


def test_a_lone_message_is_cited_for_the_words_it_shares():
    """With one message every word is in all of them; sharing still makes it the source."""
    assert attribute("Northwind accepts the claim.", [ACCEPT]) == ["accept"]
