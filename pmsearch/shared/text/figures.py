"""Figures in a sentence and in a source, as comparable keys.

A figure is a number (``4``, ``94.1``, ``2,115.50``; a currency sign or code next to
it is dropped), a date (``3 April 2024``, ``April 3``, ``2024-04-03``, ``03.04.2024``,
``3/4/2024``), a time (``10:00``, ``10am``, ``2:20 p.m.``), a code (``INV-2024-0173``,
``M-AC 4821``, a token mixing letters and digits or digits joined by ``-`` / ``/``),
an e-mail address or a URL. Words are never figures: ``three``, ``Monday``, ``April``
alone.

Both sides are scanned from their :func:`normalize` form (case-folded, NFKC, dashes
unified); before that a thin / narrow no-break / no-break space between digit groups
(``2 115,50``) becomes ``'`` so that it reads as a thousands separator. A sentence's
white space has been collapsed by then, so in a sentence digit groups split by single
spaces are one number, supported as a whole or, failing that, group by group. Each
figure becomes keys:

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

from pmsearch.shared.text.calendar import MONTHS
from pmsearch.shared.text.normalize import Normalized, normalize_with_map

Key = tuple

# Month names in the languages mail to a European business arrives in ("le jeudi 18 avril"
# supports "on 18 April"); only beside a day or a year do they read as a date.
_MONTHS = MONTHS


def _trie(words: list[str]) -> str:
    """A regex matching exactly ``words``, longest first, as a trie (fast to reject)."""
    tree: dict = {}
    for word in words:
        node = tree
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict) -> str:
        branches = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if "" in node:
            return f"(?:{body})?"
        return body

    return emit(tree)


_MONTH = _trie(list(_MONTHS))

_UNITS = frozenset(
    """st nd rd th k m km cm mm kg g mg t l ml h hr hrs min mins s sec ms d x gb mb kb tb
    kw kwh w v mph kmh px pt pcs""".split()
)
_CODES = "eur|usd|gbp|chf|jpy|cad|aud|sek|nok|dkk|pln|czk"
_CURRENCY_CODE = re.compile(rf"(?:{_CODES})")
_CURRENCY_TAIL = re.compile(rf"(?<=\d)(?:{_CODES})\Z")
_THIN_GROUP = re.compile(r"(?<=\d)[\u2009\u202f\u00a0](?=\d{3}(?!\d))")

# Each alternative has an outer named group (``Match.lastgroup`` names the handler).
# Alternatives starting with a digit and with a letter are tried apart; within each, the
# first that matches wins, so the more specific come first.
_NUM_END = r"(?![\w-]|[.,]\d)"
_HOST_URL = r"[\w-]++(?:\.[\w-]++)+/[^\s<>\"\[\]()]*"
_EMAIL = r"[\w.%+-]++@[\w-]+(?:\.[\w-]+)+"
_TOKEN_DIGIT = r"\d[^\W_]*(?:[-_/.,'][^\W_]+)*"
_TOKEN_LETTER = r"[^\W\d_]++(?:[-_/.,']?[^\W\d_]++)*+[-_/.,']?\d[^\W_]*(?:[-_/.,'][^\W_]+)*"
_DIGIT_LED = (
    rf"(?P<url2>{_HOST_URL})"
    rf"|(?P<email2>{_EMAIL})"
    rf"|(?P<iso>(?P<iy>\d{{4}})(?P<isep>[-/.])(?P<im>\d{{1,2}})(?P=isep)(?P<id>\d{{1,2}})"
    r"(?:t(?P<ith>\d{2}):(?P<itm>[0-5]\d)(?::[0-5]\d(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?"
    rf"{_NUM_END})"
    rf"|(?P<numdate>(?P<n1>\d{{1,2}})(?P<nsep>[-/.])(?P<n2>\d{{1,2}})(?P=nsep)(?P<ny>\d{{4}}|\d{{2}})"
    rf"{_NUM_END})"
    r"|(?P<colon>(?P<th>\d{1,2}):(?P<tm>[0-5]\d)(?::[0-5]\d)?(?!\d)"
    r"(?:\s*(?P<tap>[ap])(?:\.m\b\.?|m\b))?)"
    r"|(?P<dot>(?P<dh>\d{1,2})\.(?P<dm>[0-5]\d)\s*(?P<dap>[ap])(?:\.m\b\.?|m\b))"
    r"|(?P<hmark>(?P<xh>\d{1,2})(?:h(?P<xm>[0-5]\d)?|\s?uhr)(?!\w))"
    rf"|(?P<dayrange>(?P<r1>\d{{1,2}})\s?[-\u2013]\s?(?P<r2>\d{{1,2}})\.?\s*(?:of\s+)?(?P<rmon>{_MONTH})(?!\w)\.?"
    rf"(?:,?\s*(?P<ry>\d{{4}}){_NUM_END})?)"
    rf"|(?P<daymonth>(?P<dd>\d{{1,2}})(?:st|nd|rd|th|er|\.)?\s*(?:(?:of|de)\s+)?(?P<dmon>{_MONTH})(?!\w)\.?"
    rf"(?:,?\s*(?:de\s+)?(?P<dy>\d{{4}}){_NUM_END})?)"
    r"|(?P<hour>(?P<hh>\d{1,2})\s*(?P<hap>[ap])(?:\.m\b\.?|m\b))"
    rf"|(?P<token>{_TOKEN_DIGIT})"
)
# URL, e-mail and code alternatives are only tried when the chunk holds an anchor.
_HAS_ANCHOR = r"(?=[^\s]*?(?:[\d@/]|www\.))"
_LETTER_LED = (
    rf"{_HAS_ANCHOR}(?:(?P<url>(?:https?://|www\.)[^\s<>\"\[\]()]+|{_HOST_URL})"
    rf"|(?P<email>{_EMAIL}))"
    rf"|(?P<monthday>(?P<mmon>{_MONTH})\.?\s*(?P<md>\d{{1,2}})(?:st|nd|rd|th)?(?![\w:]|[.,]\d)"
    rf"(?:,?\s*(?P<my>\d{{4}}){_NUM_END})?)"
    rf"|(?P<monthyear>(?P<ymon>{_MONTH})\.?,?\s*(?P<yy>\d{{4}}){_NUM_END})"
    r"|(?P<plate>[^\W\d_]{1,3}-[^\W\d_]{1,2}\s?\d{1,4}[eh]?(?!\w))"
    rf"|{_HAS_ANCHOR}(?P<token2>{_TOKEN_LETTER})"
)
_SCAN = re.compile(rf"(?<![\w:])(?:(?=\d)(?:{_DIGIT_LED})|(?=[^\W\d_])(?:{_LETTER_LED}))")
_TOKEN = re.compile(rf"(?<!\w)(?:{_TOKEN_DIGIT}|{_TOKEN_LETTER})")
# A number as mail writes one, its groups apart by ".", "," or "'" (2,115.50; 1'200).
NUMBER = r"\d+(?:[.,']\d+)*"
_NUMBER = re.compile(NUMBER)
_NUMBER_UNIT = re.compile(r"(\d+(?:[.,]\d+)?)([^\W\d_]+)")
# A length of time joined to its unit: "24-month", "3-day", "2-hour".
_COUNTED = re.compile(r"(\d{1,4})-(?:day|week|month|year|hour|minute|night)s?")
_SEPARATOR = re.compile(r"[.,']")
_GROUPS = re.compile(r"[^\W_]+")
_URL_TAIL = ".,;:!?'"
_URL_TLD = re.compile(r"\.[^\W\d_]{2,}/")
_SCHEME = re.compile(r"\Ahttps?://")


@dataclass(frozen=True, slots=True)
class Figure:
    """A figure of a sentence: its normalised span, and the keys any of which supports it
    (or, failing those, its ``parts`` if every one of them is supported)."""

    start: int
    end: int
    lookups: tuple[Key, ...]
    parts: tuple[Figure, ...] = ()


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
    head_ok = 1 <= len(groups[0]) <= 3 and groups[0][0] != "0"  # may lead thousands groups
    if len(kinds) == 1:
        sep = seps[0]
        if len(seps) > 1 or sep == "'":
            if head_ok and all(len(g) == 3 for g in groups[1:]):
                return [_canon("".join(groups))]
            return None
        head, tail = groups
        if len(tail) == 3 and head_ok:
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
    if token.isdigit():
        return [("n", _canon(token))]
    bare = token
    if bare[0].isalpha():
        lead = _CURRENCY_CODE.match(bare)
        if lead and bare[lead.end() : lead.end() + 1].isdigit():
            bare = bare[lead.end() :]
    if bare[-1].isalpha():
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
    counted = _COUNTED.fullmatch(token)
    if counted:
        # "a 24-month renewal" counts what "24 months" does.
        return [("n", _canon(counted.group(1))), ("c", _code(token))]
    groups = _GROUPS.findall(token)
    keys = [("c", "".join(groups))]
    if source:
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
    if ampm and 13 <= hour <= 23:
        # "14:00 AM": a 24-hour time with a stray suffix (the small model's habit);
        # an hour past noon names one time of day whatever follows it.
        ampm = None
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


def _url(m: re.Match[str], source: bool) -> list[Key] | None:
    url = m.group(m.lastgroup).rstrip(_URL_TAIL)
    if not (url.startswith(("http", "www.")) or _URL_TLD.search(url)):
        return None
    return [("u", _SCHEME.sub("", url).rstrip("/"))]


def _email(m: re.Match[str], source: bool) -> list[Key]:
    return [("e", m.group(m.lastgroup).strip("."))]


def _iso(m: re.Match[str], source: bool) -> list[Key] | None:
    g = m.group
    day, month = int(g("id")), int(g("im"))
    if not _valid(day, month):
        return None
    keys = _date_keys(day, month, int(g("iy")), source)
    if g("ith") is not None:
        keys += _time_keys(int(g("ith")), int(g("itm")), None, source) or []
    return keys


def _numdate(m: re.Match[str], source: bool) -> list[Key] | None:
    g = m.group
    a, b, year = int(g("n1")), int(g("n2")), _year(g("ny"))
    orders = [(a, b)] if g("nsep") == "." else [(a, b), (b, a)]
    keys = [
        k for d, mo in dict.fromkeys(orders) if _valid(d, mo) for k in _date_keys(d, mo, year, source)
    ]
    if g("nsep") != ".":
        keys += _token_keys(g(0), source)  # 03-04-2024 may be a reference, too
    return keys or None


def _colon(m: re.Match[str], source: bool) -> list[Key] | None:
    return _time_keys(int(m.group("th")), int(m.group("tm")), m.group("tap"), source)


def _dot(m: re.Match[str], source: bool) -> list[Key] | None:
    return _time_keys(int(m.group("dh")), int(m.group("dm")), m.group("dap"), source)


def _hour(m: re.Match[str], source: bool) -> list[Key] | None:
    return _time_keys(int(m.group("hh")), 0, m.group("hap"), source)


def _hour_mark(m: re.Match[str], source: bool) -> list[Key] | None:
    """A 24-hour time written the French or German way: "14h00", "14h", "14 Uhr"."""
    return _time_keys(int(m.group("xh")), int(m.group("xm") or 0), None, source)


def _day_month(m: re.Match[str], source: bool) -> list[Key] | None:
    day, month = int(m.group("dd")), _MONTHS[m.group("dmon")]
    year = m.group("dy")
    return _date_keys(day, month, int(year) if year else None, source) if _valid(day, month) else None


def _day_range(m: re.Match[str], source: bool) -> list[Key] | None:
    """Days of one month ("12-13 June 2024"): as a range, and in a source each day too,
    so "June 12" is found in it."""
    first, last, month = int(m.group("r1")), int(m.group("r2")), _MONTHS[m.group("rmon")]
    year = int(m.group("ry")) if m.group("ry") else None
    if not (first < last and _valid(first, month) and _valid(last, month)):
        return None
    keys: list[Key] = [("dr", first, last, month)]
    if source:
        keys += [k for day in range(first, last + 1) for k in _date_keys(day, month, year, True)]
        keys += _token_keys(f"{first}-{last}", True)
    return keys


def _month_day(m: re.Match[str], source: bool) -> list[Key] | None:
    day, month = int(m.group("md")), _MONTHS[m.group("mmon")]
    year = m.group("my")
    return _date_keys(day, month, int(year) if year else None, source) if _valid(day, month) else None


def _month_year(m: re.Match[str], source: bool) -> list[Key]:
    month, year = _MONTHS[m.group("ymon")], int(m.group("yy"))
    return [("ym", month, year), ("n", str(year))] if source else [("ym", month, year)]


def _plate(m: re.Match[str], source: bool) -> list[Key]:
    plate = m.group("plate")
    keys: list[Key] = [("c", _code(plate))]
    if source:
        keys += [("n", _canon(x)) for x in _GROUPS.findall(plate) if x.isdigit()]
    return keys


def _token(m: re.Match[str], source: bool) -> list[Key]:
    return _token_keys(m.group(m.lastgroup), source)


_HANDLERS = {
    "url": _url, "url2": _url, "email": _email, "email2": _email, "iso": _iso,
    "numdate": _numdate, "colon": _colon, "dot": _dot, "hmark": _hour_mark, "hour": _hour,
    "daymonth": _day_month, "dayrange": _day_range, "monthday": _month_day, "monthyear": _month_year,
    "plate": _plate, "token": _token, "token2": _token,
}


# Every figure holds a digit, "@", "/" or "www."; in sparse text the scanner only runs
# in a window around each: from the chunk before (a month name, a plate's letters) to
# three chunks after ("3rd of April 2024"). Chunks are separated by spaces (normalised
# text has no other white space). Dense text is scanned whole: the same figures, faster.
_ANCHOR = re.compile(r"[\d@/]+")  # a plain character set: sre searches it fast
_FORWARD = re.compile(r"[^ ]*(?: +[^ ]+){0,3}")
_DENSE = 1 / 40  # anchor runs per character above which windows do not pay
_DIGITS_PER_RUN = 1 / 6  # a digit count that surely means dense text: 6 digits per run


def _anchors(text: str) -> list[int]:
    """Start of each run of anchor characters, and of each ``www.``, in order."""
    starts = [m.start() for m in _ANCHOR.finditer(text)]
    if "www." in text:
        i = text.find("www.")
        while i != -1:
            starts.append(i)
            i = text.find("www.", i + 1)
        starts.sort()
    return starts


def _windows(text: str, anchors: list[int]) -> Iterator[tuple[int, int]]:
    """Merged windows around every anchor: each figure lies inside the window of its first
    anchor, so inside one of these, which start and end at chunk boundaries (where the
    scanner's look-behind and look-ahead see what they would see in the whole text)."""
    start = end = chunk_end = -1
    for i in anchors:
        if i < chunk_end:
            continue  # same chunk as the anchor before: same window
        chunk_start = text.rfind(" ", 0, i) + 1
        back = chunk_start - 1
        while back > 0 and text[back - 1] == " ":
            back -= 1
        w_start = text.rfind(" ", 0, back) + 1 if back > 0 else chunk_start
        chunk_end = text.find(" ", i)
        if chunk_end == -1:
            chunk_end = len(text)
        w_end = _FORWARD.match(text, i).end()
        if start == -1:
            start, end = w_start, w_end
        elif w_start <= end:
            end = max(end, w_end)
        else:
            yield start, end
            start, end = w_start, w_end
    if start != -1:
        yield start, end


def _source_windows(text: str) -> list[tuple[int, int]]:
    """Where to scan a source: windows, or the whole text when it is dense with digits."""
    if sum(map(text.count, "0123456789")) * _DIGITS_PER_RUN > len(text) * _DENSE:
        return [(0, len(text))]
    anchors = _anchors(text)
    if len(anchors) < len(text) * _DENSE:
        return list(_windows(text, anchors))
    return [(0, len(text))]


def scan(
    text: str, source: bool, accept=None, windowed: bool | None = None
) -> Iterator[tuple[int, int, list[Key]]]:
    """(start, end, keys) of each figure of normalised ``text``, left to right.

    ``accept(match)`` may veto a structured match (then its tokens are read one by one).
    ``windowed`` forces (True) or forbids (False) scanning windows only; the result is
    the same either way.
    """
    anchors = _anchors(text)
    if not anchors:
        return
    if windowed is None:
        windowed = len(anchors) < len(text) * _DENSE
    windows = _windows(text, anchors) if windowed else [(0, len(text))]
    for w_start, w_end in windows:
        for m in _SCAN.finditer(text, w_start, w_end):
            kind = m.lastgroup
            keys = _HANDLERS[kind](m, source) if accept is None or accept(m) else None
            if keys is not None:
                end = m.end()
                if kind in ("url", "url2"):
                    end = m.start() + len(m.group(kind).rstrip(_URL_TAIL))
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
    """Every key the normalised source text supports (see the module docstring).

    The same keys as :func:`scan` gives, without spans: a tighter loop, since a source
    may hold hundreds of figures.
    """
    windows = _source_windows(norm_text)
    keys: set[Key] = set()
    add, update = keys.add, keys.update
    handlers, finditer, token_keys = _HANDLERS, _SCAN.finditer, _token_keys
    for w_start, w_end in windows:
        for m in finditer(norm_text, w_start, w_end):
            kind = m.lastgroup
            if kind == "token":
                token = m.group(kind)
                if token.isdigit():
                    add(("n", _canon(token)))
                else:
                    update(token_keys(token, True))
                continue
            found = handlers[kind](m, True)
            if found is None:
                for t in _TOKEN.finditer(norm_text, m.start(), m.end()):
                    update(token_keys(t.group(), True))
            else:
                update(found)
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
        kind = m.lastgroup
        if kind == "plate":
            start, end = norm.source_span(m.start(), m.end())
            return not any(ch.islower() for ch in original[start:end])
        mon = m.group("mmon") if kind == "monthday" else m.group("ymon") if kind == "monthyear" else None
        if mon == "may":
            start, end = norm.source_span(m.start(), m.start() + 3)
            return original[start:end] == "May"
        return True

    found = [Figure(s, e, tuple(keys)) for s, e, keys in scan(norm.text, False, accept)]
    return _join_groups(norm.text, found)


_GROUP_HEAD = re.compile(r"\d{1,3}")
_GROUP = re.compile(r"\d{3}")
_GROUP_LAST = re.compile(r"\d{3}(?:[.,]\d+)?")


def _join_groups(text: str, found: list[Figure]) -> list[Figure]:
    """Digit groups split by single spaces (``2 115,50``) as one number: a sentence's
    white space is collapsed before it is checked, so a thin space looks like this."""
    out: list[Figure] = []
    i = 0
    while i < len(found):
        j = i + 1
        if _GROUP_HEAD.fullmatch(text, found[i].start, found[i].end):
            while (
                j < len(found)
                and found[j].start == found[j - 1].end + 1
                and text[found[j - 1].end] == " "
                and _GROUP_LAST.fullmatch(text, found[j].start, found[j].end)
            ):
                j += 1
                if not _GROUP.fullmatch(text, found[j - 1].start, found[j - 1].end):
                    break  # decimals end the number
        if j - i > 1:
            parts = tuple(found[i:j])
            joined = text[parts[0].start : parts[-1].end].replace(" ", "'")
            lookups = tuple(("n", r) for r in number_readings(joined) or ())
            out.append(Figure(parts[0].start, parts[-1].end, lookups, parts))
        else:
            out.append(found[i])
        i = j
    return out


def supported(figure: Figure, key_sets: list[frozenset[Key]]) -> bool:
    if any(k in keys for keys in key_sets for k in figure.lookups):
        return True
    return bool(figure.parts) and all(supported(part, key_sets) for part in figure.parts)
