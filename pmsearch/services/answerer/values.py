"""The values a text gives, comparable however they are written: dates, amounts, and
the other particulars an answer may leave out (times, numbers, e-mail addresses, phone
numbers, links, codes).

Read with the toolkit's figures reader (:mod:`pmsearch.shared.text.figures`, amounts by
:mod:`pmsearch.shared.text.amounts`), the one the verifier judges with, so a detail the answerer
adds is the figure the verifier will look for.
"""

from __future__ import annotations

import re
from decimal import Decimal

from pmsearch.shared.text import calendar
from pmsearch.shared.text.amounts import as_amount
from pmsearch.shared.text.figures import Figure, normalize_figures, sentence_figures

# A month named alone ("when the policy renews in July"): after a word that makes it a
# time (the modal "may" is not one). The figures reader reads a month only beside a day
# or a year.
_MONTH_ALONE = re.compile(
    r"\b(?:in|from|until|till|by|since|before|after|of|mid-?|early|late)\s+"
    rf"({'|'.join(calendar.MONTH_NAMES['en'])})\b",
    re.I,
)
# A phone number: digit groups split by spaces, slashes or hyphens, seven digits or
# more, not inside a code. The figures reader has no phone numbers: it reads the groups
# as numbers.
_PHONE = re.compile(r"(?<![\w-])\+?\d[\d /-]{6,}\d(?![\w-])")
_PHONE_DIGITS = 7


def _figures(text: str) -> list[Figure]:
    norm = normalize_figures(text)
    # Digit groups read as one number ("3 150.00 EUR") are an amount as a whole.
    return [as_amount(Figure(f.start, f.end, f.lookups), norm.text) for f in sentence_figures(norm, text)]


def _phones(text: str) -> tuple[set[str], str]:
    """The phone numbers ``text`` gives (their digits), and the text without them."""
    found = set()
    for m in _PHONE.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if len(digits) >= _PHONE_DIGITS and not dates(m.group()):  # "2024-05-14" is a day
            found.add(f"phone:{digits}")
            text = text.replace(m.group(), " ")
    return found, text


def _date(figure: Figure) -> tuple[int, int] | None:
    """The (month, day) a figure names, if it is a date."""
    for key in figure.lookups:
        if key[0] in ("dy", "dn", "dm"):
            return key[2], key[1]
    return None


def _amount(figure: Figure) -> str | None:
    """An amount's value with two decimals ("2115.50"), if the figure is one."""
    for key in figure.lookups:
        if key[0] in ("amt", "any"):
            return f"{Decimal(key[-1]):.2f}"
    return None


def dates(text: str) -> set[tuple[int, int]]:
    """The (month, day) pairs ``text`` names."""
    return {d for f in _figures(text) if (d := _date(f)) is not None}


def amounts(text: str) -> set[str]:
    """The amounts ``text`` gives (a number with a currency or a scale), as digits with
    two decimals ("1,250.00 EUR" and "€1.250,00" meet)."""
    return {a for f in _figures(text) if (a := _amount(f)) is not None}


def _detail(figure: Figure) -> str | None:
    if (day := _date(figure)) is not None:
        return f"date:{day[0]}-{day[1]}"
    if (amount := _amount(figure)) is not None:
        return f"amount:{amount}"
    kinds = {key[0]: key for key in figure.lookups}
    if "t" in kinds:
        hour, minute = kinds["t"][1], kinds["t"][2]
        return f"time:{hour}:{minute:02d}"
    for kind, name in (("u", "link"), ("e", "email"), ("c", "code")):
        if kind in kinds:
            return f"{name}:{kinds[kind][1]}"
    if "n" in kinds:
        return f"number:{int(Decimal(kinds['n'][1]))}"
    return None


def details(text: str) -> set[str]:
    """The particulars ``text`` gives, each as one comparable value: ``date:4-3``,
    ``month:7`` (a month named alone), ``time:14:00``, ``amount:2115.50``, ``email:...``,
    ``link:...``, ``phone:...``, ``code:...`` and, for any other number, ``number:92``."""
    found, rest = _phones(text)
    found |= {d for f in _figures(rest) if (d := _detail(f)) is not None}
    found |= {f"month:{calendar.MONTH_NAMES['en'].index(m.group(1).casefold()) + 1}" for m in _MONTH_ALONE.finditer(text)}
    return found


def given(found: set[str]) -> set[str]:
    """Values comparable across kinds: an amount's number is the answer's number too."""
    out = set(found)
    for value in found:
        kind, _, v = value.partition(":")
        if kind == "amount":
            out.add(f"number:{int(float(v))}")
        elif kind == "date":
            out.add(f"month:{v.split('-')[0]}")
    return out
