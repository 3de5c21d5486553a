"""What a question asks for, part by part, and which parts an answer leaves out.

The embedded model answers the first part of a question and stops: "When does the night
shift start, what are the hours, and who leads it?" came back with the start date and
the lead, without the hours. Code sees that cheaply: each part's question word or noun
names the kind of fact it wants (a time, a date, an amount, a place, a person, a link,
an account to pay into), and each kind has a shape an answer that gives it must show. A
part the answer shows no shape for is missing, and the planner asks the model once to
add it.

The shapes are deliberately loose: they decide only whether to ask again (the planner)
and whether a second sentence adds a part (the answerer), never whether an answer is
true (the verifier does that against the sources).
"""

from __future__ import annotations

import re

from shared.text import calendar

TIME, DATE, WHEN, AMOUNT, PLACE, PERSON, CONTACT, LINK, ACCOUNT = (
    "time", "date", "when", "amount", "place", "person", "contact", "link", "account"
)

# What each kind is called when the model is asked to add it.
WANTED = {
    TIME: "the time",
    DATE: "the date",
    WHEN: "the date or time",
    AMOUNT: "the amount",
    PLACE: "the place (the address or room)",
    PERSON: "the person's name",
    CONTACT: "how to reach them (phone number or e-mail address)",
    LINK: "the link",
    ACCOUNT: "the account (IBAN or account number)",
}

# Which account to pay into; not "comes off our account", which asks when.
ASKS_ACCOUNT = re.compile(r"\b(?:(?:which|what) (?:bank )?account|account number|iban|bank (?:details|account))\b")

# Words in a part of the question that ask for a kind. "when" is satisfied by a date or
# a time; "date" and "time" named as nouns each want their own.
_ASKS = (
    (LINK, re.compile(r"\b(link|url|web ?address)\b")),
    (TIME, re.compile(r"\b(what time|(?<!-)times?(?!-)|hours|opening hours)\b")),  # not "on-time delivery"
    (DATE, re.compile(r"\b(date|what day|which day|deadline)\b")),
    (WHEN, re.compile(r"\b(when|by when|until when)\b")),
    (AMOUNT, re.compile(r"\b(how much|cost|costs|price|amount|worth|total|fee|salary)\b")),
    (PLACE, re.compile(r"\b(where|place|address|location|venue)\b")),
    (PERSON, re.compile(r"\bwho\b")),
    (CONTACT, re.compile(r"\b(reach|contact|phone|e-?mail address)\b")),
    (ACCOUNT, ASKS_ACCOUNT),
)

# A new part starts at a question word after a comma or "and", or after a question mark.
_PARTS = re.compile(
    r"\?\s*|,?\s+and\s+(?=(?:how|when|what|who|where|which|by when)\b)|,\s*(?=(?:how|when|what|who|where|which)\b)"
)

MONTH_NAMES = calendar.MONTH_NAMES["en"]
WEEKDAY_NAMES = calendar.WEEKDAY_NAMES["en"]
_MONTHS = "|".join([*(a for a, _ in calendar.MONTH_ABBREVIATIONS["en"]), "may", *(m for m in MONTH_NAMES if m != "may")])
_DAYS = "|".join(WEEKDAY_NAMES) + "|today|tomorrow|tonight"
_TIME_SHAPE = re.compile(r"\b\d{1,2}[:.h]\d{2}\b|\b\d{1,2}\s?(?:am|pm|a\.m\.|p\.m\.|uhr|o'clock)|\bnoon\b|\bmidnight\b")
_DATE_SHAPE = re.compile(
    rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\b|\b(?:{_MONTHS})\.?\s+\d{{1,2}}\b"
    rf"|\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}[./]\d{{1,2}}[./](?:\d{{2,4}})?|\b(?:{_DAYS})\b|\b(?:{_MONTHS})\b"
)
_AMOUNT_SHAPE = re.compile(r"\d")
_LINK_SHAPE = re.compile(r"https?://|\bwww\.")
# An address ("Leopoldstraße 118", "12 rue de Gerland") or a word for a place.
_PLACE_SHAPE = re.compile(
    r"\b\d+[a-z]?,?\s+[a-zäöüß]{3,}|\b[a-zäöüß]{3,}\s+\d+[a-z]?\b"
    r"|\b(?:street|str\.|straße|strasse|rue|road|avenue|lane|platz|room|hall|office|floor|building|gate"
    r"|terminal|dock|station|airport|reception|warehouse|site)\b"
)
_CONTACT_SHAPE = re.compile(r"@|\+?\d[\d /-]{5,}\d")
# An IBAN ("DE12 7002 0270 0015 8842 19"), or an account number given as one.
_ACCOUNT_SHAPE = re.compile(r"\b[a-z]{2}\d{2}(?: ?[a-z0-9]{4}){2,7}(?: ?[a-z0-9]{1,3})?\b|\baccount (?:number |no\.? )?\d[\d -]{4,}")
_SENTENCES = re.compile(r"[^.!?]+")
# An invoice, claim or order code: letters, then hyphen-joined groups ending in digits
# (INV-2024-0173, CLM-2024-55817, FP-3391).
CODE = re.compile(r"\b[A-Za-z]{2,}(?:-[A-Za-z0-9]+)*-\d{2,}\b")
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


def codes(question: str) -> tuple[str, ...]:
    """The codes a question names, upper-cased, first occurrence order."""
    return tuple(dict.fromkeys(m.group().upper() for m in CODE.finditer(question)))


def parts(question: str) -> list[tuple[str, frozenset[str]]]:
    """The question's parts, each with the kinds of fact it asks for (maybe none)."""
    out = []
    for part in _PARTS.split(question):
        text = part.strip(" ,.;")
        if not text:
            continue
        low = text.casefold()
        kinds = {kind for kind, pattern in _ASKS if pattern.search(low)}
        if kinds & {DATE, TIME}:
            kinds.discard(WHEN)  # "when ... what date": the noun says which
        out.append((text, frozenset(kinds)))
    return out


def _without_when(low: str) -> str:
    """``low`` with its dates and times blanked: their digits are no amount or street
    number."""
    return _DATE_SHAPE.sub(" ", _TIME_SHAPE.sub(" ", low))


def gives(kind: str, answer: str, question: str = "") -> bool:
    """Whether ``answer`` shows a fact of ``kind`` (by its shape: a time, an IBAN, ...)."""
    low = answer.casefold()
    if kind == TIME:
        return bool(_TIME_SHAPE.search(low))
    if kind == DATE:
        return bool(_DATE_SHAPE.search(low))
    if kind == WHEN:
        return bool(_TIME_SHAPE.search(low) or _DATE_SHAPE.search(low))
    if kind == AMOUNT:  # a number that is not part of a date, a time or a code
        return bool(_AMOUNT_SHAPE.search(CODE.sub(" ", _without_when(low))))
    if kind == LINK:
        return bool(_LINK_SHAPE.search(low))
    if kind == CONTACT:
        # A claim or invoice number is no phone number ("quote CLM-2024-55817").
        return bool(_CONTACT_SHAPE.search(CODE.sub(" ", answer).casefold()))
    if kind == PLACE:
        # A place the question already names ("be in Lyon") is not where exactly.
        return bool(_PLACE_SHAPE.search(_without_when(low)) or _names(answer, question))
    if kind == PERSON:
        return bool(_names(answer, question))
    if kind == ACCOUNT:
        return bool(_ACCOUNT_SHAPE.search(low))
    return True


def missing(question: str, answer: list[str]) -> list[str]:
    """The kinds of fact the question asks for that ``answer`` (its sentences) shows
    nowhere, in the question's order; each once."""
    text = " ".join(answer)
    out: list[str] = []
    for _, kinds in parts(question):
        for kind, _pattern in _ASKS:
            if kind in kinds and kind not in out and not gives(kind, text, question):
                out.append(kind)
    return out


def request(kinds: list[str]) -> str:
    """The follow-up instruction asking the model to add what is missing."""
    wanted = [WANTED[k] for k in kinds]
    what = wanted[0] if len(wanted) == 1 else ", ".join(wanted[:-1]) + " and " + wanted[-1]
    return (
        f'Your answer leaves out {what} that the question asks for. Write the whole answer again in "answer", '
        f"adding {what} exactly as the passages give it. If the passages do not give it, write your answer again "
        "unchanged."
    )
