"""Amounts: a number's currency and scale, so "$100" is not found in "EUR 100 million".

The figures check compares numbers by value alone, which is right for a plain number
("4 cartons", "order 45010") but lets an amount borrow any equal number of its source.
A number in a sentence with a currency (``EUR``, ``€``, ``$``, ``USD 5k``) or a scale
word (``million``, ``bn``, ``thousand``) is an amount, and it is found only where a
cited source states

* the same value at the same scale in the same currency, or
* the same value, scale applied, as a plain number (a table's ``2,340.50`` under a
  "Total (EUR)" heading), or
* for an amount with a scale and no currency, the same scaled value in any currency.

So "$100" is not found in "EUR 100" or in "EUR 100 million", and "EUR 100" is not found
in "EUR 100 million"; "EUR 2,115.50" is found in "2.115,50 €" and in "2,115.50", and
"100 million" in "EUR 100,000,000". Both sides are read from their normalised form
(case-folded), as the rest of the figures check reads them.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from pmsearch.shared.text.figures import NUMBER, Figure, Key, number_readings

_SIGNS = {"€": "eur", "$": "usd", "£": "gbp", "¥": "jpy"}
_WORDS = {"euro": "eur", "euros": "eur", "dollar": "usd", "dollars": "usd"}
_CODES = "eur|usd|gbp|chf|jpy|cad|aud|sek|nok|dkk|pln|czk"
_CURRENCY = rf"[€$£¥]|\b(?:{_CODES}|euros?|dollars?)\b"
# "m" and "k" are metres and kilos as often as millions and thousands: a scale only
# after a currency.
_SCALES = {"thousand": 3, "thousands": 3, "million": 6, "millions": 6, "mio": 6, "mn": 6,
           "billion": 9, "billions": 9, "bn": 9}
_SHORT_SCALES = {"k": 3, "m": 6}
_SCALE = r"thousands?|millions?|mio|mn|billions?|bn|k|m"

_AMOUNT = re.compile(
    rf"(?:(?P<before>{_CURRENCY}) ?)?(?<!\w)(?<!\d[.,'])(?P<number>{NUMBER})(?![\w.,']?\d)"
    rf"(?: ?(?P<scale>{_SCALE})\b)?(?: ?(?P<after>{_CURRENCY}))?"
)
_BEFORE = re.compile(rf"(?:{_CURRENCY}) ?\Z")
_AFTER = re.compile(rf" ?(?P<scale>{_SCALE})\b(?: ?(?P<cur>{_CURRENCY}))?| ?(?P<cur2>{_CURRENCY})")
_SHORT_SCALED = re.compile(r"[\d.,']+(?P<unit>k|m)")
_LEADING_CODE = re.compile(rf"\A(?P<cur>{_CODES}|[€$£¥])(?=\d)")


def _currency(text: str | None) -> str | None:
    if not text:
        return None
    text = text.strip()
    return _SIGNS.get(text) or _WORDS.get(text) or text


def _power(scale: str | None, currency: str | None) -> int | None:
    """The scale's power of ten; None when the word is no scale here."""
    if scale is None:
        return 0
    if scale in _SCALES:
        return _SCALES[scale]
    return _SHORT_SCALES[scale] if currency else None


def _scaled(value: str, power: int) -> str:
    try:
        number = Decimal(value).scaleb(power)
    except InvalidOperation:
        return value
    text = format(number.normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def source_keys(norm_text: str) -> set[Key]:
    """Keys of every number of a normalised source: ``("amt", currency, value)`` and
    ``("any", value)`` for an amount, ``("plain", value)`` for a plain number."""
    keys: set[Key] = set()
    for m in _AMOUNT.finditer(norm_text):
        readings = number_readings(m.group("number")) or ()
        currency = _currency(m.group("before") or m.group("after"))
        power = _power(m.group("scale"), currency)
        if power is None:
            power = 0
        for value in readings:
            if currency is None and not power:
                keys.add(("plain", value))
                continue
            scaled = _scaled(value, power)
            keys.add(("any", scaled))
            if currency:
                keys.add(("amt", currency, scaled))
    return keys


def as_amount(figure: Figure, norm_text: str) -> Figure:
    """``figure`` with amount lookups when the sentence gives it a currency or a scale;
    unchanged otherwise (a plain number, a date, a code)."""
    if figure.parts:
        return figure
    span = norm_text[figure.start : figure.end]
    lead = _LEADING_CODE.match(span)
    number = span[lead.end() :] if lead else span
    unit = _SHORT_SCALED.fullmatch(number)
    values = [k[1] for k in figure.lookups if k[0] == "n"]
    # A number, or a number with "k" / "m" ("5k" is also read as a code): nothing else.
    if not values or (unit is None and len(values) != len(figure.lookups)):
        return figure
    currency = _currency(lead.group("cur")) if lead else None
    if currency is None:
        before = _BEFORE.search(norm_text, 0, figure.start)
        currency = _currency(before.group(0)) if before else None
    scale = unit.group("unit") if unit else None
    after = _AFTER.match(norm_text, figure.end)
    if after:
        scale = scale or after.group("scale")
        currency = currency or _currency(after.group("cur") or after.group("cur2"))
    power = _power(scale, currency)
    if currency is None and not power:
        return figure
    power = power or 0
    lookups: list[Key] = []
    for value in values:
        scaled = _scaled(value, power)
        lookups += [("amt", currency, scaled) if currency else ("any", scaled), ("plain", scaled)]
    return Figure(figure.start, figure.end, tuple(dict.fromkeys(lookups)))
