"""What `pmsearch ask` prints of a result (pmsearch/cli/ask.py)."""

from __future__ import annotations

from rich.console import Console

from pmsearch.cli.ask import render_result


def printed(result: dict) -> str:
    console = Console(record=True, width=200)
    render_result(console, result)
    return console.export_text()


def test_a_written_sentence_the_mails_sentence_replaced_says_so_and_a_removed_one_says_removed():
    out = printed({
        "outcome": "answered", "run_id": "r1",
        "answer": {"text": "", "style": "write_or_extract", "sentences": []},
        "trace": {"removed_sentences": [
            {"text": "The insurer pays EUR 2,115.00.", "reason": "figure_not_found", "offending": "EUR 2,115.00",
             "replaced": True},
            {"text": "It rains.", "reason": "unsupported_claim", "offending": "rains"},
        ]},
    })
    assert "replaced by the mail's sentence (figure_not_found: EUR 2,115.00): The insurer pays EUR 2,115.00." in out
    assert "removed (unsupported_claim: rains): It rains." in out
