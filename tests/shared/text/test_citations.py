"""The citation marker format."""

from __future__ import annotations

import pytest

from pmsearch.shared.text.citations import find_markers, parse_structured, strip_markers

A = "m3f9a2c1b0d4e"
B = "m0a1b2c3d4e5f"

STRIP = {
    "single": (f"Accepted [{A}].", "Accepted.", [A]),
    "comma list": (f"Accepted [{A}, {B}].", "Accepted.", [A, B]),
    "semicolon list": (f"Accepted [{A};{B}].", "Accepted.", [A, B]),
    "adjacent": (f"Accepted [{A}][{B}].", "Accepted.", [A, B]),
    "adjacent with space": (f"Accepted [{A}] [{B}].", "Accepted.", [A, B]),
    "mid sentence": (f"The insurer [{A}] accepted.", "The insurer accepted.", [A]),
    "after the stop": (f"Accepted. [{A}]", "Accepted.", [A]),
    "duplicates once": (f"A [{A}] b [{A}, {B}].", "A b.", [A, B]),
    "upper case canonical": (f"Accepted [{A.upper()}].", "Accepted.", [A]),
    "rfc message id": ("Accepted [<abc.1@mail.example>].", "Accepted.", ["<abc.1@mail.example>"]),
    "numeric footnote": ("Accepted [1].", "Accepted.", ["1"]),
    "prose stays": ("Accepted [sic].", "Accepted [sic].", []),
    "etc stays": ("Accepted [etc.].", "Accepted [etc.].", []),
    "mixed bracket is prose": (f"Accepted [{A}, see].", f"Accepted [{A}, see].", []),
    "markdown link stays": (f"See [{A}](http://x).", f"See [{A}](http://x).", []),
    "spaces inside brackets": (f"Accepted [ {A} , {B} ].", "Accepted.", [A, B]),
    "quote closes after marker": (f'He said "yes" [{A}].', 'He said "yes".', [A]),
}


@pytest.mark.parametrize("text,clean,ids", STRIP.values(), ids=STRIP.keys())
def test_strip_markers(text: str, clean: str, ids: list[str]) -> None:
    assert strip_markers(text) == (clean, ids)


def test_adjacent_brackets_form_one_marker() -> None:
    (marker,) = find_markers(f"x [{A}] [{B}] y")
    assert marker.ids == (A, B)


@pytest.mark.parametrize(
    "values,ids,malformed",
    [
        ([A], [A], []),
        ([f"[{A}]"], [A], []),
        ([f"{A}, {B}"], [A, B], []),
        ([A, A.upper()], [A], []),
        (["not an id!"], [], ["not an id!"]),
        ([""], [], [""]),
        ([A, "a b"], [A], ["a b"]),
    ],
)
def test_parse_structured(values: list[str], ids: list[str], malformed: list[str]) -> None:
    assert parse_structured(values) == (ids, malformed)
