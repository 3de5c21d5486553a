"""The shape each kind of fact a question asks for has in an answer (a time, an IBAN, a
link, ...), and which of the kinds a question asks for an answer shows nowhere.

The shapes are deliberately loose: they decide only whether the planner asks the model
once more and whether the answerer adds a detail sentence, never whether an answer is
true (the verifier judges that against the sources, with the figures reader).
"""

from __future__ import annotations

import re

from pmsearch.shared.text import calendar
from pmsearch.shared.text.question import (
    ACCOUNT,
    AMOUNT,
    CODE,
    CONTACT,
    DATE,
    LINK,
    PERSON,
    PLACE,
    TIME,
    WHEN,
    parts,
)

# The order in which one part's missing kinds are named.
ORDER = (LINK, TIME, DATE, WHEN, AMOUNT, PLACE, PERSON, CONTACT, ACCOUNT)

_MONTHS = "|".join(
    [*(a for a, _ in calendar.MONTH_ABBREVIATIONS["en"]), "may", *(m for m in calendar.MONTH_NAMES["en"] if m != "may")]
)
_DAYS = "|".join(calendar.WEEKDAY_NAMES["en"]) + "|today|tomorrow|tonight"
_TIME = re.compile(r"\b\d{1,2}[:.h]\d{2}\b|\b\d{1,2}\s?(?:am|pm|a\.m\.|p\.m\.|uhr|o'clock)|\bnoon\b|\bmidnight\b")
_DATE = re.compile(
    rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\b|\b(?:{_MONTHS})\.?\s+\d{{1,2}}\b"
    rf"|\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}[./]\d{{1,2}}[./](?:\d{{2,4}})?|\b(?:{_DAYS})\b|\b(?:{_MONTHS})\b"
)
_DIGIT = re.compile(r"\d")
_LINK = re.compile(r"https?://|\bwww\.")
# An address ("Leopoldstraße 118", "12 rue de Gerland") or a word for a place.
_PLACE = re.compile(
    r"\b\d+[a-z]?,?\s+[a-zäöüß]{3,}|\b[a-zäöüß]{3,}\s+\d+[a-z]?\b"
    r"|\b(?:street|str\.|straße|strasse|rue|road|avenue|lane|platz|room|hall|office|floor|building|gate"
    r"|terminal|dock|station|airport|reception|warehouse|site)\b"
)
_CONTACT = re.compile(r"@|\+?\d[\d /-]{5,}\d")
# An IBAN ("DE12 7002 0270 0015 8842 19"), or an account number given as one.
_ACCOUNT = re.compile(r"\b[a-z]{2}\d{2}(?: ?[a-z0-9]{4}){2,7}(?: ?[a-z0-9]{1,3})?\b|\baccount (?:number |no\.? )?\d[\d -]{4,}")
_SENTENCES = re.compile(r"[^.!?]+")
_WORDS = re.compile(r"[\w'-]+")
_NOT_NAMES = re.compile(rf"(?:{_MONTHS}|{_DAYS})\.?", re.I)


def _names(answer: str, question: str) -> list[str]:
    """Capitalised words past each sentence's first word that the question does not
    already hold and that are no month or weekday: a name the answer adds."""
    asked = {w.casefold() for w in _WORDS.findall(question)}
    out = []
    for sentence in _SENTENCES.findall(answer):
        for word in _WORDS.findall(sentence)[1:]:
            if word[:1].isupper() and word.casefold() not in asked and not _NOT_NAMES.fullmatch(word):
                out.append(word)
    return out


def _without_when(low: str) -> str:
    """``low`` with its dates and times blanked: their digits are no amount or street
    number."""
    return _DATE.sub(" ", _TIME.sub(" ", low))


def shows(kind: str, answer: str, question: str = "") -> bool:
    """Whether ``answer`` shows a fact of ``kind`` (by its shape: a time, an IBAN, ...)."""
    low = answer.casefold()
    if kind == TIME:
        return bool(_TIME.search(low))
    if kind == DATE:
        return bool(_DATE.search(low))
    if kind == WHEN:
        return bool(_TIME.search(low) or _DATE.search(low))
    if kind == AMOUNT:  # a number that is not part of a date, a time or a code
        return bool(_DIGIT.search(CODE.sub(" ", _without_when(low))))
    if kind == LINK:
        return bool(_LINK.search(low))
    if kind == CONTACT:
        # A claim or invoice number is no phone number ("quote CLM-2024-55817").
        return bool(_CONTACT.search(CODE.sub(" ", answer).casefold()))
    if kind == PLACE:
        # A place the question already names ("be in Lyon") is not where exactly.
        return bool(_PLACE.search(_without_when(low)) or _names(answer, question))
    if kind == PERSON:
        return bool(_names(answer, question))
    if kind == ACCOUNT:
        return bool(_ACCOUNT.search(low))
    return True


def missing(question: str, answer: list[str]) -> list[str]:
    """The kinds of fact the question asks for that ``answer`` (its sentences) shows
    nowhere, in the question's order (within a part, :data:`ORDER`'s); each once."""
    text = " ".join(answer)
    out: list[str] = []
    for _, kinds in parts(question):
        for kind in ORDER:
            if kind in kinds and kind not in out and not shows(kind, text, question):
                out.append(kind)
    return out
