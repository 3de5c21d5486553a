"""Amounts keep their currency and scale: a sentence's "$100" is not found in a
source's "EUR 100 million", while format differences still match."""

from __future__ import annotations

import pytest

from pmsearch.shared.text import amounts, figures
from pmsearch.shared.text.figures import normalize_figures, sentence_figures, supported


def found(sentence: str, source: str) -> list[bool]:
    norm = normalize_figures(sentence)
    source_text = normalize_figures(source).text
    keys = [figures.source_keys(source_text) | amounts.source_keys(source_text)]
    return [supported(amounts.as_amount(f, norm.text), keys) for f in sentence_figures(norm, sentence)]


@pytest.mark.parametrize(
    "sentence,source",
    [
        ("The offsite costs $100 per person.", "The market grew to EUR 100 million last year."),
        ("The offsite costs $100 per person.", "The offsite costs EUR 100 per person."),
        ("It costs EUR 100.", "It grew to EUR 100 million."),
        ("The fund holds EUR 5k.", "The fund holds EUR 5 million."),
    ],
    ids=["other_currency_and_scale", "other_currency", "other_scale", "short_scale"],
)
def test_an_amount_is_not_found_in_another_currency_or_scale(sentence, source):
    assert found(sentence, source) == [False]


@pytest.mark.parametrize(
    "sentence,source",
    [
        ("We will pay EUR 2,115.50.", "Wir zahlen 2.115,50 € aus."),
        ("We will pay €2,115.50.", "We will pay EUR 2,115.50 less the deductible."),
        ("We will pay EUR 2,115.50.", "Total (EUR): 2,115.50"),
        ("The fund holds 100 million.", "It holds EUR 100,000,000."),
        ("The fund holds EUR 100 million.", "It holds 100 million euros."),
        ("The budget is USD 5k.", "Budget: $5,000"),
        ("The total is 12 EUR.", "price 12.00 EUR"),
        ("The kite set is worth EUR 240.00.", "carton,customer,value_eur\nB7-04,Tailspin,kite set,240.00"),
    ],
    ids=["sign_and_code", "sign_before", "plain_table_figure", "scale_written_out", "euros_word", "k_after_currency", "code_after",
         "csv_field"],
)
def test_an_amount_is_found_whatever_its_format(sentence, source):
    assert found(sentence, source) == [True]


def test_a_plain_number_still_matches_by_value():
    assert found("Order 45010 has 4 cartons weighing 5 kg.", "order 45010: 4 cartons, EUR 5 each") == [True, True, True]


def test_a_metre_is_not_a_million():
    (figure,) = sentence_figures(norm := normalize_figures("The hall is 40 m long."), "The hall is 40 m long.")
    assert amounts.as_amount(figure, norm.text) is figure
