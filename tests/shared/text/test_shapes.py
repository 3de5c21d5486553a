"""Which parts of a question an answer leaves out, by the shape each kind of fact has."""

from __future__ import annotations

import pytest

from pmsearch.shared.text.shapes import missing


@pytest.mark.parametrize(
    ("question", "answer", "left_out"),
    [
        ("When does the night shift start, what are the hours, and who leads it?",
         "The night shift starts on 2 April, led by Jonas.", ["time"]),
        ("When does the night shift start, what are the hours, and who leads it?",
         "The night shift starts on 2 April at 22:00, led by Jonas.", []),
        ("What's the new expense app called and when is the training?", "The new expense app is called Spendly.", ["when"]),
        ("When do I need to be in Lyon, and where exactly?", "You need to be in Lyon on 18 April at 14:00.", ["place"]),
        ("When do I need to be in Lyon, and where exactly?", "On 18 April at 14:00 at 12 rue de Gerland.", []),
        ("How much is the Initech invoice and when is it due?", "It is EUR 389.90, due on 12 May 2024.", []),
        ("How much is the Initech invoice and when is it due?", "It is due on 12 May.", ["amount"]),  # a day is no amount
        ("Expense report EXP-2024-0048: whose is it and how much?", "EXP-2024-0048 is Dana Weber's.", ["amount"]),  # nor a code
        ("Who is handling the Golf claim, and how do I reach her?", "Sabine Roth handles it.", ["contact"]),
        ("Who is handling the Golf claim, and how do I reach her?", "Sabine Roth, sabine.roth@insurer.example.", []),
        ("Who is handling the Golf claim, and how do I reach her?",
         "Sabine Roth; quote the claim number CLM-2024-55817.", ["contact"]),  # a claim number is no phone
        ("Who is handling the Golf claim, and how do I reach her?", "Sabine Roth, +49 89 8830 1456.", []),
        ("Who leads the night shift?", "The night shift is led by the shift lead.", ["person"]),
        ("Send me the link to the May invoice.", "The May invoice is online.", ["link"]),
        ("Did the insurer accept the Golf claim?", "Yes, it did.", []),  # a yes/no question asks for no shape
        ("Which account do we pay the Initech chairs invoice into?", "Acme Logistics GmbH, Accounts payable.",
         ["account"]),
        ("Which account do we pay the Initech chairs invoice into?", "IBAN DE12 7002 0270 0015 8842 19.", []),
        ("When does the March VAT come off our account?", "On 10 April.", []),  # asks when, not which account
    ],
)
def test_an_answer_leaves_out_the_parts_it_shows_no_shape_for(question, answer, left_out):
    assert missing(question, [answer]) == left_out
