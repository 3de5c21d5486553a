"""One reading of a question for every stage: its parts (loose), the figure its first
clause asks for (strict), and what it pins down."""

from __future__ import annotations

import pytest

from pmsearch.shared.text.question import ACCOUNT, AMOUNT, IDENTIFIER, LINK, WHEN, asks, parts, pins


def test_a_question_splits_into_its_parts_each_with_what_it_asks_for():
    assert parts("When does the night shift start, what are the hours, and who leads it?") == [
        ("When does the night shift start", frozenset({"when"})),
        ("what are the hours", frozenset({"time"})),
        ("who leads it", frozenset({"person"})),
    ]


def test_nouns_name_what_a_single_part_asks_for():
    (part,) = parts("Based on the emails, give me the date, time and place of the Sprinter windscreen repair.")
    assert part[1] == {"date", "time", "place"}


def test_french_and_german_questions_split_and_ask_too():
    assert parts("Wann kam die Version raus, und wie viel kostet sie?") == [
        ("Wann kam die Version raus", frozenset({"when"})),
        ("wie viel kostet sie", frozenset({"amount"})),
    ]
    assert parts("Quand la bêta a-t-elle été installée ?")[0][1] == {"when"}


def test_a_noun_further_on_is_no_asked_figure():
    assert parts("What did the insurer say about the total?")[0][1] == {"amount"}  # loose: ask the model again
    assert asks("What did the insurer say about the total?") is None  # strict: remove nothing for it


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How much is the June Hooli Cloud invoice?", AMOUNT),
        ("What's the amount on Fabrikam's corrected invoice?", AMOUNT),
        ("What was the damaged stock in hall B worth?", AMOUNT),
        ("What are we paying the new dispatcher?", AMOUNT),
        ("What do they charge for a pallet?", AMOUNT),
        ("Which account do we pay the chairs invoice into?", ACCOUNT),  # not "what do we pay"
        ("When is the board meeting?", WHEN),
        ("Parcelly says it is delayed - when is it supposed to arrive?", WHEN),
        ("What's the number of the credit note we sent Contoso?", IDENTIFIER),
        ("What IBAN should we pay Fabrikam to?", ACCOUNT),
        ("Send me the link to the May invoice.", LINK),
        ("Who presents first at the quarterly review?", None),
        ("Which garage replaced the windscreen and what did we pay?", None),
        ("Where is the meeting, and what time does it start?", None),
        ("Wann wurde TeamFound 1.0 veröffentlicht?", WHEN),
        ("Bis wann muss alles fertig sein?", WHEN),
        ("Wie viele Spiele hat Dom durchlaufen lassen?", AMOUNT),
        ("Was kostet die Lizenz?", AMOUNT),
        ("Quand la bêta a-t-elle été installée ?", WHEN),
        ("Combien de personnes étaient présentes ?", AMOUNT),
        ("Quel est le montant de la facture ?", AMOUNT),
        ("Wer hat den Patch geschrieben?", None),
        ("Qui représentait Altran ?", None),
    ],
)
def test_what_the_first_clause_asks_for(question: str, kind: str | None) -> None:
    assert asks(question) == kind


def test_codes_names_months_and_quarters_are_pinned_apart() -> None:
    p = pins("Did Initech send invoice INV-2024-0173 for the Q2 review in March?")
    assert (p.codes, p.names, p.months, p.quarters, p.polar) == (("INV-2024-0173",), ("initech",), ("march",),
                                                                  ("q2",), True)
