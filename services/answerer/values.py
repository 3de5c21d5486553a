"""The values a text gives, comparable however they are written: dates, amounts, and
the other particulars an answer may leave out (times, numbers, e-mail addresses, phone
numbers, links, codes)."""

from __future__ import annotations

import re

from shared.text import calendar
from shared.text.question import CODE

# A month by its first three letters ("Sept.", "March").
_MONTHS = {name[:3]: n for n, name in enumerate(calendar.MONTH_NAMES["en"], 1)}
_MONTH = rf"({'|'.join(_MONTHS)})[a-z]*\.?"
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?![a-z])", re.I)
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b", re.I)
_ISO = re.compile(r"\b\d{4}-(\d{2})-(\d{2})\b")
_DOTTED = re.compile(r"\b(\d{1,2})\.(\d{1,2})\.(?:\d{2,4})?(?!\d)")
# An amount: a number beside a currency, or one with cents ("1,000 brochures" counts).
_CURRENCY = r"(?:\b(?:eur|usd|gbp|chf)(?![a-z])|[€$£])"
_NUM = r"\d{1,3}(?:[,.\u202f ]\d{3})+(?:[.,]\d{2})?|\d+(?:[.,]\d{2})?"
_AMOUNT = re.compile(
    rf"{_CURRENCY}\s?({_NUM})\b|\b({_NUM})\s?{_CURRENCY}|(?<![\w,.])(\d{{1,3}}(?:,\d{{3}})*\.\d{{2}})\b(?![.,]?\d)",
    re.I,
)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL = re.compile(r"https?://[^\s)>\]]+|\bwww\.[^\s)>\]]+")
_TIME = re.compile(r"\b(\d{1,2})(?:[:.h](\d{2})\b|\s?(am|pm|a\.m\.|p\.m\.))", re.I)
_PHONE = re.compile(r"\+?\d[\d /-]{6,}\d")
# A month named alone ("when the policy renews in July"): after a word that makes it a
# time (the modal "may" is not one).
_MONTH_ALONE = re.compile(
    r"\b(?:in|from|until|till|by|since|before|after|of|mid-?|early|late)\s+"
    rf"({'|'.join(calendar.MONTH_NAMES['en'])})\b",
    re.I,
)
_NUMBER = re.compile(r"\d+")


def dates(text: str) -> set[tuple[int, int]]:
    """The (month, day) pairs ``text`` names."""
    found = set()
    for m in _DAY_MONTH.finditer(text):
        found.add((_MONTHS[m.group(2)[:3].casefold()], int(m.group(1))))
    for m in _MONTH_DAY.finditer(text):
        found.add((_MONTHS[m.group(1)[:3].casefold()], int(m.group(2))))
    for m in _ISO.finditer(text):
        found.add((int(m.group(1)), int(m.group(2))))
    for m in _DOTTED.finditer(text):
        found.add((int(m.group(2)), int(m.group(1))))
    return {(month, day) for month, day in found if 1 <= month <= 12 and 1 <= day <= 31}


def amounts(text: str) -> set[str]:
    """The amounts ``text`` gives, as digits with two decimals ("1,250.00" and "1250"
    beside a currency meet)."""
    found = set()
    for m in _AMOUNT.finditer(text):
        raw = re.sub(r"[\u202f ]", "", next(g for g in m.groups() if g))
        # The last separator followed by exactly two digits is the decimal point.
        head, sep, cents = raw[:-3], raw[-3:-2], raw[-2:]
        if sep in ",." and cents.isdigit() and len(raw) > 3:
            whole = re.sub(r"[,.]", "", head)
        else:
            whole, cents = re.sub(r"[,.]", "", raw), "00"
        if whole.isdigit():
            found.add(f"{int(whole)}.{cents}")
    return found


def details(text: str) -> set[str]:
    """The particulars ``text`` gives, each as one comparable value: ``date:4-3``,
    ``month:7`` (a month named alone), ``time:14:00``, ``amount:2115.50``, ``email:...``, ``link:...``, ``phone:...``,
    ``code:...`` and, for any other number, ``number:92``."""
    found = {f"date:{m}-{d}" for m, d in dates(text)} | {f"amount:{a}" for a in amounts(text)}
    rest = text
    for pattern in (_AMOUNT, _DAY_MONTH, _MONTH_DAY, _ISO, _DOTTED):
        rest = pattern.sub(" ", rest)
    found |= {f"month:{_MONTHS[m.group(1)[:3].casefold()]}" for m in _MONTH_ALONE.finditer(rest)}
    for pattern, kind in ((_URL, "link"), (_EMAIL, "email"), (CODE, "code")):
        for m in pattern.finditer(rest):
            found.add(f"{kind}:{m.group().casefold().rstrip('.,;')}")
        rest = pattern.sub(" ", rest)
    for m in _TIME.finditer(rest):
        hour, minute, half = int(m.group(1)), m.group(2) or "00", (m.group(3) or "").casefold()[:1]
        if half == "p" and hour < 12:
            hour += 12
        found.add(f"time:{hour}:{minute}")
    rest = _TIME.sub(" ", rest)
    for m in _PHONE.finditer(rest):
        digits = re.sub(r"\D", "", m.group())
        if len(digits) >= 7:
            found.add(f"phone:{digits}")
            rest = rest.replace(m.group(), " ")
    # What is left: street and house numbers, counts, gates ("Tor 3", "42 units").
    found |= {f"number:{int(n)}" for n in _NUMBER.findall(rest)}
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
