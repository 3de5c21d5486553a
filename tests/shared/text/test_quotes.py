"""Which phrases count as quotes."""

from __future__ import annotations

import pytest

from pmsearch.shared.text.quotes import Quote, extract_quotes

CASES = {
    "straight double": ('He wrote "we accept" today', ["we accept"]),
    "typographic double": ("He wrote “we accept” today", ["we accept"]),
    "german": ("Er schrieb „wir zahlen“ heute", ["wir zahlen"]),
    "guillemets": ("Il a écrit «nous payons» hier", ["nous payons"]),
    "corner brackets": ("他说「接受了」", ["接受了"]),
    "two quotes": ('"one thing" and "another thing"', ["one thing", "another thing"]),
    "unclosed double runs to the end": ('He wrote "we accept it', ["we accept it"]),
    "typographic single": ("He wrote ‘we accept’ today", ["we accept"]),
    "typographic single with apostrophe inside": ("He wrote ‘we don’t accept’ today", ["we don’t accept"]),
    "straight single two words": ("He wrote 'we accept' today", ["we accept"]),
    "straight single one word is ambiguous": ("He wrote 'accepted' today", []),
    "apostrophes": ("Tom's car isn't the drivers' car", []),
    "rock n roll": ("rock 'n' roll", []),
    "curly apostrophes": ("Tom’s car isn’t here", []),
    "unclosed single is an apostrophe": ("the ’90s were fine", []),
    "single inside double stays inside": ("He said \"it's 'very good' now\"", ["it's 'very good' now"]),
    "empty quotes": ('He said "" and "  "', []),
    "no quotes": ("Plain sentence.", []),
}


@pytest.mark.parametrize("text,expected", CASES.values(), ids=CASES.keys())
def test_extract(text: str, expected: list[str]) -> None:
    assert [q.text for q in extract_quotes(text)] == expected


@pytest.mark.parametrize(
    "quote,fragments",
    [
        ("we accept.", ["we accept"]),
        ("we … accept", ["we", "accept"]),
        ("we [...] accept", ["we", "accept"]),
        ("...", []),
        ("?", []),
        ("“Nested”", ['"nested"']),
    ],
)
def test_fragments(quote: str, fragments: list[str]) -> None:
    assert Quote(quote, 0, len(quote)).fragments() == fragments
