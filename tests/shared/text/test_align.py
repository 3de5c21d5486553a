"""Sentence alignment: the one or two sentences (or table rows) of a source that carry a
sentence of an answer."""

from __future__ import annotations

from pmsearch.shared.text.align import best_window, units
from pmsearch.shared.text.figures import normalize_figures, sentence_figures
from pmsearch.shared.text.words import LETTERS, STOP_WORDS, stem

MAIL = (
    "Dear Mr. Meier,\n\nyour claim CLM-2024-55817 for the Golf is settled. We will transfer\n"
    "EUR 2,115.50 for invoice INV-2024-0173 of the workshop dated 3 April 2024.\n"
    "Questions? Write to claims@insurer.example.\n\nAnna Schmidt"
)


def aligned(sentence: str, text: str, *, table: bool = False) -> str:
    norm = normalize_figures(sentence)
    stems = frozenset(stem(w) for w in LETTERS.findall(norm.text) if w not in STOP_WORDS)
    text_units = units(text, table=table)
    window = best_window(text_units, sentence_figures(norm, sentence), stems)
    assert window is not None
    return " ".join(text[text_units[window.first].start : text_units[window.last].end].split())


def test_a_sentence_aligns_to_the_one_sentence_that_holds_its_figures():
    got = aligned("The insurer will transfer EUR 2,115.50 for INV-2024-0173.", MAIL)
    assert got == "We will transfer EUR 2,115.50 for invoice INV-2024-0173 of the workshop dated 3 April 2024."


def test_figures_of_two_neighbouring_sentences_align_to_both():
    got = aligned("Claim CLM-2024-55817 is settled with EUR 2,115.50.", MAIL)
    assert got.startswith("your claim CLM-2024-55817") and got.endswith("dated 3 April 2024.")


def test_words_alone_align_where_they_are():
    assert aligned("Questions go to the claims address.", MAIL) == "Questions? Write to claims@insurer.example."


def test_a_table_row_aligns_with_its_header_words():
    table = "Service | Amount\nStorage (2 TB) | EUR 67.00\nBackup | EUR 9.00\nTotal | EUR 76.00"
    assert aligned("The backup costs EUR 9.00.", table) == "Backup | EUR 9.00"
    assert aligned("The total amount was EUR 76.00.", table) == "Total | EUR 76.00"


def test_units_are_spans_of_the_text_itself():
    for unit in units(MAIL):
        assert MAIL[unit.start : unit.end].strip() == MAIL[unit.start : unit.end]
        assert MAIL[unit.start : unit.end]


def test_a_text_without_sentences_has_no_window():
    assert best_window(units("   \n  "), [], frozenset({"claim"})) is None
