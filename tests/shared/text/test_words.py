"""Words: the stemmer both sides of the trust boundary read with, and English detection."""

from __future__ import annotations

import pytest

from pmsearch.shared.text.words import in_english, stem


@pytest.mark.parametrize(
    "words",
    [
        ("accept", "accepts", "accepted", "accepting", "acceptance"),
        ("insurer", "insurance", "insured", "insure"),
        ("photo", "photos"),
        ("damage", "damaged", "damages"),
        ("payment", "payments"),
        ("copy", "copies", "copied"),
        ("box", "boxes"),
        ("class", "classes"),
        ("stop", "stopped", "stopping"),
        ("quick", "quickly"),
        ("confirm", "confirmed", "confirmation"),
        ("transfer", "transferred", "transferring"),
        ("pay", "paid", "payment"),
    ],
)
def test_inflections_share_a_stem(words: tuple[str, ...]) -> None:
    assert len({stem(w) for w in words}) == 1, {w: stem(w) for w in words}


@pytest.mark.parametrize(("a", "b"), [("claim", "clam"), ("invoice", "voice"), ("paid", "plaid")])
def test_different_words_keep_different_stems(a: str, b: str) -> None:
    assert stem(a) != stem(b)


def test_english_prose_reads_as_english_and_french_does_not() -> None:
    assert in_english("The claim was accepted by the insurer on Monday.")
    assert not in_english("Le comité de suivi a été déplacé au 14 novembre à midi.")
