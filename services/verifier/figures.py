"""Figures in a sentence and in a source, as comparable keys.

A figure is a number (``4``, ``94.1``, ``2,115.50``; a currency sign or code next to
it is dropped), a date (``3 April 2024``, ``April 3``, ``2024-04-03``, ``03.04.2024``,
``3/4/2024``), a time (``10:00``, ``10am``, ``2:20 p.m.``), a code (``INV-2024-0173``,
``M-AC 4821``, a token mixing letters and digits or digits joined by ``-`` / ``/``),
an e-mail address or a URL. Words are never figures: ``three``, ``Monday``, ``April``
alone.

Both sides are scanned from their :func:`normalize` form (case-folded, NFKC, dashes
unified); before that a thin / narrow no-break / no-break space between digit groups
(``2 115,50``) becomes ``'`` so that it reads as a thousands separator. Each figure
becomes keys:

* number: its value as a canonical decimal string, thousands separators dropped and
  trailing fractional zeros stripped (``4,870.00`` -> ``4870``). One separator before
  exactly three digits is ambiguous (``1,250``, ``1.250``): both readings count.
* date: ``(day, month, year)``. A sentence date with a year needs that date with that
  year in the source, or that date stated there without a year; one without a year
  needs the day and month. ``3/4/2024`` and ``03-04-2024`` may be either order.
* time: ``(hour, minute)`` in 24 h. A sentence time without am/pm between 1:00 and
  12:59 may be either half of the day; one with am/pm must match exactly.
* code: letters and digits only, case-folded (``INV-2024-0173`` -> ``inv20240173``).
* e-mail address: case-folded; URL: case-folded, without scheme or trailing slash.

A source states more than its figures literally show, so its keys are a superset: the
day and year of its dates and the full hours of its times count as numbers, a code's
trailing groups count as codes and its digit groups as numbers (``CLM-2024-55817``
supports ``55817``), month and year of a date count as a month-year.

A sentence figure is supported when any of its :attr:`Figure.lookups` is among the keys
of one of the sentence's cited sources.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from services.verifier.normalize import Normalized, normalize_with_map

Key = tuple

_MONTHS: dict[str, int] = {}
for _number, _names in enumerate(
    (
        "jan january januar jänner",
        "feb february februar",
        "mar march märz maerz",
        "apr april",
        "may mai",
        "jun june juni",
        "jul july juli",
        "aug august",
        "sep sept september",
        "oct october okt oktober",
        "nov november",
        "dec december dez dezember",
    ),
    start=1,
):
    _MONTHS.update(dict.fromkeys(_names.split(), _number))
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))

_UNITS = frozenset(
    """st nd rd th k m km cm mm kg g mg t l ml h hr hrs min mins s sec ms d x gb mb kb tb
    kw kwh w v mph kmh px pt pcs""".split()
)
_CODES = "eur|usd|gbp|chf|jpy|cad|aud|sek|nok|dkk|pln|czk"
_CURRENCY_CODE = re.compile(rf"(?:{_CODES})")
_CURRENCY_TAIL = re.compile(rf"(?<=\d)(?:{_CODES})\Z")
_THIN_GROUP = re.compile(r"(?<=\d)[\u2009\u202f\u00a0](?=\d{3}(?!\d))")

_NUM_END = r"(?![\w-]|[.,]\d)"
_SCAN = re.compile(
    r"(?<![\w:])(?:"
    # URL with a scheme or www., or a bare host with a path.
    r"(?P<url>(?:https?://|www\.)[^\s<>\"\[\]()]+|[\w-]++(?:\.[\w-]++)+/[^\s<>\"\[\]()]*)"
    r"|(?P<email>[\w.%+-]++@[\w-]+(?:\.[\w-]+)+)"
    rf"|(?P<iy>\d{{4}})(?P<isep>[-/.])(?P<im>\d{{1,2}})(?P=isep)(?P<id>\d{{1,2}})"
    r"(?:t(?P<ith>\d{2}):(?P<itm>[0-5]\d)(?::[0-5]\d(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?"
    rf"{_NUM_END}"
    rf"|(?P<n1>\d{{1,2}})(?P<nsep>[-/.])(?P<n2>\d{{1,2}})(?P=nsep)(?P<ny>\d{{4}}|\d{{2}}){_NUM_END}"
    r"|(?P<th>\d{1,2}):(?P<tm>[0-5]\d)(?::[0-5]\d)?(?!\d)(?:\s*(?P<tap>[ap])\.?m\b\.?)?"
    r"|(?P<dh>\d{1,2})\.(?P<dm>[0-5]\d)\s*(?P<dap>[ap])\.?m\b\.?"
    rf"|(?P<dd>\d{{1,2}})(?:st|nd|rd|th|\.)?\s*(?:of\s+)?(?P<dmon>{_MONTH})(?!\w)\.?"
    rf"(?:,?\s*(?P<dy>\d{{4}}){_NUM_END})?"
    rf"|(?P<mmon>{_MONTH})\.?\s*(?P<md>\d{{1,2}})(?:st|nd|rd|th)?(?![\w:]|[.,]\d)"
    rf"(?:,?\s*(?P<my>\d{{4}}){_NUM_END})?"
    rf"|(?P<ymon>{_MONTH})\.?,?\s*(?P<yy>\d{{4}}){_NUM_END}"
    r"|(?P<hh>\d{1,2})\s*(?P<hap>[ap])\.?m\b\.?"
    r"|(?P<plate>[^\W\d_]{1,3}-[^\W\d_]{1,2}\s?\d{1,4}[eh]?)(?!\w)"
    r"|(?P<token>\d[^\W_]*(?:[-_/.,'][^\W_]+)*"
    r"|[^\W\d_]++(?:[-_/.,']?[^\W\d_]++)*+[-_/.,']?\d[^\W_]*(?:[-_/.,'][^\W_]+)*)"
    r")"
)
_TOKEN = re.compile(
    r"(?<!\w)(?:\d[^\W_]*(?:[-_/.,'][^\W_]+)*"
    r"|[^\W\d_]++(?:[-_/.,']?[^\W\d_]++)*+[-_/.,']?\d[^\W_]*(?:[-_/.,'][^\W_]+)*)"
)
_NUMBER = re.compile(r"\d+(?:[.,']\d+)*")
_NUMBER_UNIT = re.compile(r"(\d+(?:[.,]\d+)?)([^\W\d_]+)")
_SEPARATOR = re.compile(r"[.,']")
_GROUPS = re.compile(r"[^\W_]+")
_URL_TAIL = ".,;:!?'"


@dataclass(frozen=True, slots=True)
class Figure:
    """A figure of a sentence: its normalised span, and the keys any of which supports it."""

    start: int
    end: int
    lookups: tuple[Key, ...]


# ----------------------------------------------------------------------------- values


def _canon(integer: str, fraction: str = "") -> str:
    fraction = fraction.rstrip("0")
    integer = integer.lstrip("0") or "0"
    return f"{integer}.{fraction}" if fraction else integer


def number_readings(token: str) -> list[str] | None:
    """Canonical values ``token`` may mean (``1,250`` -> 1250 or 1.25), or None."""
    if not _NUMBER.fullmatch(token):
        return None
    groups = _SEPARATOR.split(token)
    seps = _SEPARATOR.findall(token)
    if not seps:
        return [_canon(token)]
    kinds = set(seps)
    head_ok = 1 <= len(groups[0]) <= 3
    if len(kinds) == 1:
        sep = seps[0]
        if len(seps) > 1 or sep == "'":
            if head_ok and all(len(g) == 3 for g in groups[1:]):
                return [_canon("".join(groups))]
            return None
        head, tail = groups
        if len(tail) == 3 and head_ok and head.lstrip("0"):
            return [_canon(head + tail), _canon(head, tail)]
        return [_canon(head, tail)]
    # Two kinds: the last separator is the decimal one and occurs once.
    decimal = seps[-1]
    if decimal == "'" or seps.count(decimal) != 1:
        return None
    if not head_ok or any(len(g) != 3 for g in groups[1:-1]):
        return None
    return [_canon("".join(groups[:-1]), groups[-1])]


def _year(text: str) -> int:
    year = int(text)
    if len(text) == 2:
        year += 2000 if year < 70 else 1900
    return year


def _valid(day: int, month: int) -> bool:
    return 1 <= day <= 31 and 1 <= month <= 12


# ----------------------------------------------------------------------------- keys


def _code(text: str) -> str:
    return "".join(_GROUPS.findall(text))


def _token_keys(token: str, source: bool) -> list[Key]:
    """Keys of a token holding a digit: a number (maybe with currency or unit) or a code."""
    bare = token
    lead = _CURRENCY_CODE.match(bare)
    if lead and bare[lead.end() : lead.end() + 1].isdigit():
        bare = bare[lead.end() :]
    trail = _CURRENCY_TAIL.search(bare)
    if trail:
        bare = bare[: trail.start()]
    readings = number_readings(bare)
    if readings is not None:
        return [("n", r) for r in readings]
    unit = _NUMBER_UNIT.fullmatch(bare)
    if unit and unit.group(2) in _UNITS:
        keys: list[Key] = [("n", r) for r in number_readings(unit.group(1)) or ()]
        return keys + [("c", _code(bare))]
    keys = [("c", _code(token))]
    if source:
        groups = _GROUPS.findall(token)
        for i in range(1, len(groups)):
            keys.append(("c", "".join(groups[i:])))
        keys.extend(("n", _canon(g)) for g in groups if g.isdigit())
    return keys


def _date_keys(day: int, month: int, year: int | None, source: bool) -> list[Key]:
    if not source:
        return [("dy", day, month, year), ("dn", day, month)] if year else [("dm", day, month)]
    keys: list[Key] = [("dm", day, month), ("n", str(day))]
    if year:
        keys += [("dy", day, month, year), ("ym", month, year), ("n", str(year))]
    else:
        keys.append(("dn", day, month))
    return keys


def _time_keys(hour: int, minute: int, ampm: str | None, source: bool) -> list[Key] | None:
    if ampm:
        if not 1 <= hour <= 12:
            return None
        h24 = hour % 12 + (12 if ampm == "p" else 0)
    elif hour > 23:
        return None
    else:
        h24 = hour
    if source:
        keys: list[Key] = [("t", h24, minute), ("t12", hour, minute)]
        if minute == 0:
            keys.append(("n", str(hour)))
        return keys
    if ampm is None and 1 <= hour <= 12:
        return [("t", hour, minute), ("t12", hour, minute)]
    return [("t", h24, minute)]


def _match_keys(m: re.Match[str], source: bool) -> list[Key] | None:
    """Keys of one scanner match; None when it is not the figure it looked like."""
    g = m.group
    if g("token") is not None:
        return _token_keys(g("token"), source)
    if g("url") is not None:
        url = g("url").rstrip(_URL_TAIL)
        if not (url.startswith(("http", "www.")) or re.search(r"\.[^\W\d_]{2,}/", url)):
            return None
        url = re.sub(r"\Ahttps?://", "", url).rstrip("/")
        return [("u", url)]
    if g("email") is not None:
        return [("e", g("email").strip("."))]
    if g("iy") is not None:
        day, month = int(g("id")), int(g("im"))
        if not _valid(day, month):
            return None
        keys = _date_keys(day, month, int(g("iy")), source)
        if g("ith") is not None:
            keys += _time_keys(int(g("ith")), int(g("itm")), None, source) or []
        return keys
    if g("n1") is not None:
        a, b, year = int(g("n1")), int(g("n2")), _year(g("ny"))
        orders = [(a, b)] if g("nsep") == "." else [(a, b), (b, a)]
        keys = [k for d, mo in dict.fromkeys(orders) if _valid(d, mo) for k in _date_keys(d, mo, year, source)]
        if g("nsep") != ".":
            keys += _token_keys(g(0), source)
        return keys or None
    if g("th") is not None:
        return _time_keys(int(g("th")), int(g("tm")), g("tap"), source)
    if g("dh") is not None:
        return _time_keys(int(g("dh")), int(g("dm")), g("dap"), source)
    if g("dd") is not None:
        day, month = int(g("dd")), _MONTHS[g("dmon")]
        year = int(g("dy")) if g("dy") else None
        return _date_keys(day, month, year, source) if _valid(day, month) else None
    if g("mmon") is not None:
        day, month = int(g("md")), _MONTHS[g("mmon")]
        year = int(g("my")) if g("my") else None
        return _date_keys(day, month, year, source) if _valid(day, month) else None
    if g("ymon") is not None:
        month, year = _MONTHS[g("ymon")], int(g("yy"))
        return [("ym", month, year), ("n", str(year))] if source else [("ym", month, year)]
    if g("hh") is not None:
        return _time_keys(int(g("hh")), 0, g("hap"), source)
    if g("plate") is not None:
        keys = [("c", _code(g("plate")))]
        if source:
            keys += [("n", _canon(x)) for x in _GROUPS.findall(g("plate")) if x.isdigit()]
        return keys
    return None


def _scan(text: str, source: bool, accept=None) -> Iterator[tuple[int, int, list[Key]]]:
    """(start, end, keys) of each figure of normalised ``text``, left to right.

    ``accept(match)`` may veto a structured match (then its tokens are read one by one).
    """
    for m in _SCAN.finditer(text):
        keys = _match_keys(m, source) if accept is None or accept(m) else None
        if keys is not None:
            end = m.end()
            if m.group("url") is not None:
                end = m.start() + len(m.group("url").rstrip(_URL_TAIL))
            yield m.start(), end, keys
            continue
        for t in _TOKEN.finditer(text, m.start(), m.end()):
            yield t.start(), t.end(), _token_keys(t.group(), source)


# ----------------------------------------------------------------------------- API


def needs_preparing(text: str) -> bool:
    """Whether ``text`` splits digit groups with a thin or no-break space."""
    return _THIN_GROUP.search(text) is not None


def prepare(text: str) -> str:
    """``text`` with a thin or no-break space between digit groups read as a separator."""
    return _THIN_GROUP.sub("'", text) if _THIN_GROUP.search(text) else text


def normalize_figures(text: str) -> Normalized:
    """The normalised form figures are read from, with its map back to ``text``."""
    return normalize_with_map(prepare(text))


def source_keys(norm_text: str) -> frozenset[Key]:
    """Every key the normalised source text supports (see the module docstring)."""
    keys: set[Key] = set()
    for _, _, found in _scan(norm_text, True):
        keys.update(found)
    return frozenset(keys)


def date_keys(day: int, month: int, year: int) -> list[Key]:
    """Source keys of a date known from metadata (a message's own date)."""
    return _date_keys(day, month, year, True)


def sentence_figures(norm: Normalized, original: str) -> list[Figure]:
    """The figures of a sentence, given its normalised form and the text it came from.

    A month name is read as one only in a date or month-year; ``may`` (the verb) only
    when written ``May``. A plate needs upper-case letters as written.
    """

    def accept(m: re.Match[str]) -> bool:
        if m.group("plate") is not None:
            start, end = norm.source_span(m.start(), m.end())
            return not any(ch.islower() for ch in original[start:end])
        mon = m.group("mmon") or m.group("ymon")
        if mon == "may":
            start, end = norm.source_span(m.start(), m.start() + 3)
            return original[start:end] == "May"
        return True

    return [Figure(s, e, tuple(keys)) for s, e, keys in _scan(norm.text, False, accept)]


def supported(figure: Figure, key_sets: list[frozenset[Key]]) -> bool:
    return any(k in keys for keys in key_sets for k in figure.lookups)
