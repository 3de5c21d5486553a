"""Figures: what counts as one, how they are read, when a source supports one."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pmsearch.shared.text import figures
from pmsearch.shared.text.figures import (
    normalize_figures,
    number_readings,
    sentence_figures,
    source_keys,
    supported,
)
from pmsearch.shared.text.normalize import normalize_with_map
from tests.services.verifier.test_properties import SETTINGS


def found(sentence: str) -> list[str]:
    """The figures of ``sentence`` as written."""
    norm = normalize_figures(sentence)
    return [sentence[slice(*norm.source_span(f.start, f.end))] for f in sentence_figures(norm, sentence)]


def supports(source: str, sentence: str) -> bool:
    """Whether ``source`` supports every figure of ``sentence`` (which has at least one)."""
    norm = normalize_figures(sentence)
    figs = sentence_figures(norm, sentence)
    assert figs, sentence
    keys = [source_keys(normalize_figures(source).text)]
    return all(supported(f, keys) for f in figs)


@pytest.mark.parametrize(
    ("token", "readings"),
    [
        ("4", ["4"]),
        ("0173", ["173"]),
        ("94.1", ["94.1"]),
        ("2,115.50", ["2115.5"]),
        ("2.115,50", ["2115.5"]),
        ("2115.50", ["2115.5"]),
        ("1'234.50", ["1234.5"]),
        ("1,250", ["1250", "1.25"]),  # one separator before three digits: either
        ("1.250", ["1250", "1.25"]),
        ("0,250", ["0.25"]),
        ("4,870.00", ["4870"]),
        ("1,234,567", ["1234567"]),
        ("1.234.567,89", ["1234567.89"]),
        ("1.2.3", None),  # not a number: a code
        ("1,23,456", None),
        ("0'000", None),
        ("1,2.3", None),
    ],
)
def test_number_readings(token: str, readings: list[str] | None) -> None:
    assert number_readings(token) == readings


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("three photos and a Monday in April", []),
        ("EUR 2,115.50, €40 and 94.1%", ["2,115.50", "40", "94.1"]),
        ("on the 3rd of April at 10 a.m.", ["3rd of April", "10 a.m."]),
        ("on April 3, 2024 at 14:20", ["April 3, 2024", "14:20"]),
        ("in April 2024", ["April 2024"]),
        ("we may 5 times, but May 5 is a date", ["5", "May 5"]),
        ("INV-2024-0173 for M-AC 4821 (covid-19)", ["INV-2024-0173", "M-AC 4821", "covid-19"]),
        ("the re-do 2024 plan", ["2024"]),  # a plate needs upper-case letters
        ("mail a.b@x.example or see https://x.example/a/b.", ["a.b@x.example", "https://x.example/a/b"]),
        ("at 2024-04-03T10:00:00Z", ["2024-04-03T10:00:00Z"]),
        ("a 5kg parcel", ["5kg"]),
        ("EUR 2 115,50", ["2 115,50"]),
    ],
)
def test_what_is_a_figure(sentence: str, expected: list[str]) -> None:
    assert found(sentence) == expected


@pytest.mark.parametrize(
    ("source", "sentence", "ok"),
    [
        # amounts
        ("EUR 2,115.50", "EUR 2115.50", True),
        ("EUR 2,115.50", "€2.115,50", True),
        ("EUR 2,115.50", "2,115.50 EUR", True),
        ("2115.50", "$2,115.50", True),  # the currency need not match, the amount must
        ("EUR 2,115.50", "EUR 2,116.50", False),
        ("1,250 km", "1250 km", True),
        ("4,870", "4,870.00", True),
        ("EUR 2\u2009115,50", "EUR 2,115.50", True),
        ("EUR 2,115.50", "EUR 2 115,50", True),  # a collapsed thin space
        ("94.1%", "94.1 percent", True),
        ("94.1%", "94.2%", False),
        # dates
        ("3 April 2024", "April 3", True),
        ("3 April 2024", "2024-04-03", True),
        ("3 April 2024", "03.04.2024", True),
        ("3 April 2024", "3/4/2024", True),
        ("3 April 2024", "4/3/2024", True),  # ambiguous: either reading
        ("3 April 2024", "3 April 2023", False),
        ("3 April 2024", "4 April 2024", False),
        ("3 April", "3 April 2024", True),  # the source states no year for it
        ("April 3rd", "the 3rd of April", True),
        ("3 April 2024", "April 2024", True),
        ("3 April 2024", "May 2024", False),
        ("3 April 2024", "2024", True),
        ("2024-04-03T10:00:00Z", "3 April 2024 at 10:00", True),
        ("12-13 June 2024", "June 12-13, 2024", True),  # a range of days, each its own date
        ("12-13 June 2024", "12-13 June", True),
        ("12-13 June 2024", "12 June", True),
        ("12-13 June 2024", "14 June", False),
        ("12-13 June 2024", "12-14 June", False),
        ("le jeudi 18 avril à 14h00", "April 18th", True),  # months in the mail's language
        ("le jeudi 18 avril", "19 April", False),
        ("am 3. März 2024", "2024-03-03", True),
        ("el 3 de marzo de 2024", "3 March 2024", True),
        ("le 1er août", "1 August", True),
        ("il 5 maggio", "May 5", True),
        ("op 12 mei", "12 May", True),
        # a length of time joined to its unit
        ("if you sign for 24 months", "a 24-month renewal", True),
        ("if you sign for 24 months", "a 36-month renewal", False),
        # times
        ("arrives at 14:00", "14:00 AM", True),  # an hour past noon is one time, whatever follows it
        ("arrives at 14:00", "14:00 PM", True),
        ("arrives at 14:00", "2:00 AM", False),
        ("at 10:00", "10am", True),
        ("at 10:00", "10 a.m.", True),
        ("at 10 am", "10:00", True),
        ("at 10 pm", "22:00", True),
        ("at 10 pm", "10:00", True),  # without am/pm, either half of the day
        ("at 10:00", "10 pm", False),
        ("at 14:20", "2:20 p.m.", True),
        ("at 14:20", "14:25", False),
        ("à 14h00, dans nos bureaux", "14:00", True),  # the French way
        ("à 14h00, dans nos bureaux", "2 pm", True),
        ("à 14h30", "14:00", False),
        ("um 9 Uhr", "at 9:00", True),  # the German way
        ("le déjeuner à 12h30", "12:30", True),
        # codes
        ("INV-2024-0173", "inv-2024-0173", True),
        ("INV-2024-0173", "INV 2024 0173", True),  # two numbers, both groups of the code
        ("INV-2024-0173", "INV-2024-0158", False),
        ("CLM-2024-55817", "claim 55817", True),
        ("CLM-2024-55817", "2024-55817", True),
        ("M-AC 4821", "M-AC4821", True),
        ("M-AC 4821", "M-AB 4821", False),
        # addresses
        ("claims@insurer.example", "CLAIMS@insurer.example", True),
        ("claims@insurer.example", "claim@insurer.example", False),
        ("https://insurer.example/claims/42", "insurer.example/claims/42/", True),
        ("https://insurer.example/claims/42", "http://insurer.example/claims/42", True),
        ("https://insurer.example/claims/42", "https://insurer.example/claims/43", False),
    ],
)
def test_source_supports(source: str, sentence: str, ok: bool) -> None:
    assert supports(source, sentence) is ok


def test_a_figure_is_found_once_scanned_in_windows_or_whole() -> None:
    pieces = (
        "3 April 2024 april 3rd of 10:30 a.m. 10am pm INV-2024-0173 M-AC 4821 a@b.example "
        "https://x.example/a/ x.example/p 2,115.50 € EUR 1.250 03.04.2024 3/4/2024 may 5 the "
        "claim and/or www.x.com 2024-04-03T10:00Z 12-34-56 - 5kg , . : Mar jan 14:20 2.20 "
        "0,25 ' x2 COVID-19 1st Dez. 9:00 1/2"
    ).split(" ") + ["  ", "\n"]
    rng = random.Random(7)
    for _ in range(3000):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 14)))
        norm = normalize_with_map(text).text
        for source in (True, False):
            whole = list(figures.scan(norm, source, windowed=False))
            assert list(figures.scan(norm, source, windowed=True)) == whole, norm


@SETTINGS
@given(text=st.text(max_size=80))
def test_windows_change_nothing_on_any_text(text: str) -> None:
    norm = normalize_with_map(text).text
    assert list(figures.scan(norm, True, windowed=True)) == list(figures.scan(norm, True, windowed=False))
