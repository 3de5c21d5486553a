"""What a question asks, read once for every stage that needs it.

Two readings of the same table of kinds (a time, a date, an amount, a place, a person,
a way to reach them, a link, an account, a number or code):

- **loose** (:func:`parts`, :func:`missing`): each part of the question and every kind
  its words ask for or name, anywhere ("give me the date, time and place"). The planner
  asks the model once more for a part its answer shows no shape of, and the answerer
  adds a detail sentence for it; neither says an answer is true.
- **strict** (:func:`asks`): the one kind of figure the question's first clause asks
  for, by its question words near the start ("how much", "when", "what is the price",
  "wann", "combien"). The verifier removes an answer that gives no figure of that kind,
  so a noun further on ("what did the insurer say about the total?") asks for nothing.

And what the question pins down (:func:`pins`): its codes, the names and months it
writes, a quarter, which version of a document, what a "which" question asks for one
of, and whether it is a yes/no question. The question words are English, French and
German, the languages of the evaluation sets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pmsearch.shared.text import calendar

TIME, DATE, WHEN, AMOUNT, PLACE, PERSON, CONTACT, LINK, ACCOUNT, IDENTIFIER = (
    "time", "date", "when", "amount", "place", "person", "contact", "link", "account", "identifier"
)

# Which account to pay into; not "comes off our account", which asks when.
_ACCOUNT = r"(?:which|what) (?:bank )?account|account number|iban|bank (?:details|account)"
# The words that ask for a kind ("when", "how much") and the nouns that name it ("the
# date", "the price"), in the order loose kinds are listed. "when" is satisfied by a date
# or a time; "date" and "time" named as nouns each want their own.
_ASKING = {
    TIME: r"what time|à quelle heure|um wie ?viel uhr",
    DATE: r"what day|which day|what date|quel jour|quelle date|an welchem tag|welches datum",
    WHEN: r"when|by when|until when|quand|jusqu'à quand|depuis quand|wann|bis wann|seit wann",
    AMOUNT: r"how much|how many|combien|wie ?viele?|wie hoch|wie teuer|was kostet",
    PLACE: r"where",
    PERSON: r"who",
}
_NAMING = {
    LINK: r"link|url|web ?address",
    TIME: r"(?<!-)times?(?!-)|hours|opening hours",  # not "on-time delivery"
    DATE: r"date|deadline",
    AMOUNT: r"cost|costs|price|amount|worth|total|fee|salary|montant|prix|coût|tarif|betrag|preis|summe",
    PLACE: r"place|address|location|venue",
    CONTACT: r"reach|contact|phone|e-?mail address",
    ACCOUNT: _ACCOUNT,
}
_LOOSE = tuple(
    (kind, re.compile(rf"\b(?:{'|'.join(p for p in (_ASKING.get(kind), _NAMING.get(kind)) if p)})\b"))
    for kind in (LINK, TIME, DATE, WHEN, AMOUNT, PLACE, PERSON, CONTACT, ACCOUNT)
)

# "What is the price", "quel est le montant", "welcher Betrag": a question word, then the
# noun of the kind.
_WHAT = r"(?:what(?:'s| is| was| are)? (?:the )?|quel(?:le)?(?: est)? (?:le |la )?|welche[rn]? )"
_NEAR_START = r"^(?:\W*\w+\W+){0,6}?"
# The first clause's figure, in the order tried: a link, an account, a number or code, an
# amount, a date or time.
_STRICT = (
    (LINK, re.compile(rf"\b(?:{_NAMING[LINK]})\b")),
    (ACCOUNT, re.compile(rf"\b(?:{_ACCOUNT})\b")),
    (IDENTIFIER, re.compile(
        r"\b(what|which)(?:'s| is| was| are)? (?:the |our |my |their )?"
        r"(?:[\w-]+ ){0,3}(number|code|reference|iban|tag|phone)\b"
    )),
    (AMOUNT, re.compile(
        rf"{_NEAR_START}(?:{_ASKING[AMOUNT]}|{_WHAT}(?:{_NAMING[AMOUNT]}|rates?)\b|what .*\b(?:worth|cost)\b"
        r"|what (?:are|is|do|does|did|will|would|should) (?:we|you|they|i|he|she|it) (?:pay|paying|charge|charging))"
        r"(?!\w)"
    )),
    (WHEN, re.compile(rf"{_NEAR_START}(?:{_ASKING[WHEN]}|{_ASKING[TIME]}|{_ASKING[DATE]})(?!\w)")),
)

# A new part starts at a question word after a comma or "and" ("et", "und"), or after a
# question mark.
_QUESTION_WORDS = r"how|when|what|who|where|which|quand|combien|qui|où|quel|wann|wie|wer|wo|was|welche"
_PARTS = re.compile(
    rf"\?\s*|,?\s+(?:and|et|und)\s+(?=(?:{_QUESTION_WORDS}|by when)\b)|,\s*(?=(?:{_QUESTION_WORDS})\b)"
)

# An invoice, claim or order code: letters, then hyphen-joined groups ending in digits
# (INV-2024-0173, CLM-2024-55817, FP-3391).
CODE = re.compile(r"\b[A-Za-z]{2,}(?:-[A-Za-z0-9]+)*-\d{2,}\b")


def codes(text: str) -> tuple[str, ...]:
    """The codes a text names, upper-cased, first occurrence order."""
    return tuple(dict.fromkeys(m.group().upper() for m in CODE.finditer(text)))


def parts(question: str) -> list[tuple[str, frozenset[str]]]:
    """The question's parts, each with the kinds of fact it asks for or names (maybe none)."""
    out = []
    for part in _PARTS.split(question):
        text = part.strip(" ,.;")
        if not text:
            continue
        low = text.casefold()
        kinds = {kind for kind, pattern in _LOOSE if pattern.search(low)}
        if kinds & {DATE, TIME}:
            kinds.discard(WHEN)  # "when ... what date": the noun says which
        out.append((text, frozenset(kinds)))
    return out


def asks(question: str) -> str | None:
    """The kind of figure the question's first clause asks for: LINK, ACCOUNT,
    IDENTIFIER, AMOUNT or WHEN (a date or a time)."""
    first = _PARTS.split(question.casefold(), maxsplit=1)[0]
    for kind, pattern in _STRICT:
        if pattern.search(first):
            return kind
    return None


# ------------------------------------------------------------------ what it pins down


@dataclass(frozen=True, slots=True)
class Pins:
    """What a question names, in lower case: codes, names (people, companies, domains),
    months, quarters ("q2"), version words ("final"), the first letters of what a
    "which" question asks for one of ("gara"); and whether it asks yes or no."""

    codes: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    months: tuple[str, ...] = ()
    quarters: tuple[str, ...] = ()
    versions: tuple[str, ...] = ()
    which: tuple[str, ...] = ()
    polar: bool = False


MONTHS = list(calendar.MONTH_NAMES["en"])
_MONTH_ABBR = {a: MONTHS[n - 1] for a, n in calendar.MONTH_ABBREVIATIONS["en"]} | {"may": "may"}
_WEEKDAYS = frozenset(calendar.weekday_numbers("en", abbreviations=True))
_CLAUSE = re.compile(r"[^.?!]+")
_WORD = re.compile(r"[^\W\d_][\w&]*(?:-[\w&]+)*(?:['’]s\b)?")
# A domain or address the question names (invoice-check.example, jobs@acme.example).
_DOMAIN = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b|\b[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}\b")
_QUARTER = re.compile(r"Q[1-4]")
# Capitalised words that name nothing in the mail: the asker, courtesy, question words
# that start a clause after a comma.
_NOT_NAMES = frozenset(
    """i i'm i've i'd mr mrs ms dr please thanks hi hello ok okay yes no what who when
    where which why how did do does is are was were can could should would will""".split()
)
# A version of a document the mail must name for the question to be about it; "new" and
# "latest" are how people ask about the current one, and any message may be that.
_VERSION = re.compile(r"\b(final|corrected|revised|amended)\s+[^\W\d_]", re.I)
KIND_PREFIX = 4
# "Which garage replaced the windscreen?": the answer names a garage.
_WHICH = re.compile(r"^\W*which ([a-z][\w-]*)\b", re.I)
_NOT_KINDS = frozenset("of one ones is are was were do does did".split())
_POLAR = re.compile(
    r"\W*(?:did|does|do|is|are|was|were|has|have|had|can|could|will|would|should|shall|may|must)(?:n't)?\b", re.I
)
# "Can you check my mail and tell me when ...": a request, not a yes/no question.
_REQUEST = re.compile(
    r"\W*(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:check|tell|find|look|show|give|let|search|see|say)\b",
    re.I,
)
_WHETHER = re.compile(r"\b(?:if|whether)\b", re.I)


def month_of(word: str) -> str | None:
    """The English month a word names, full or abbreviated ("Sept."), in lower case."""
    w = word.casefold().rstrip(".")
    if w in MONTHS:
        return w
    return _MONTH_ABBR.get(w) if len(w) in (3, 4) else None


def pins(question: str) -> Pins:
    """Codes, then capitalised words past a clause's first word (names), then months
    and quarters.

    A clause's first word is capitalised by grammar, not because it names something, so
    only a month counts there. Every German noun is capitalised too, and pinned like a
    name: the thread must use it (on the real set's German questions this removes more
    wrong sentences than right ones; docs/evaluation.md). Codes are matched as codes,
    not again as names; a weekday is a day, not a name.
    """
    names: list[str] = [m.group().casefold() for m in _DOMAIN.finditer(question)]
    without_codes = _DOMAIN.sub(" ", CODE.sub(" ", question))
    months: list[str] = []
    quarters: list[str] = []
    for clause in _CLAUSE.finditer(without_codes):
        for i, match in enumerate(_WORD.finditer(clause.group())):
            word = re.sub(r"['’]s$", "", match.group())
            if not word[:1].isupper():
                continue
            month = month_of(word)
            if month is not None:
                if word != "May" or i > 0:  # "May I ..." asks, it names no month
                    months.append(month)
                continue
            if _QUARTER.fullmatch(word):
                quarters.append(word.casefold())
                continue
            if i == 0 or word.casefold() in _NOT_NAMES | _WEEKDAYS:
                continue
            # "Munich-Lyon", "M-AC": each part is a name; a lone letter ("hall B") is
            # too short to look for.
            names.extend(p.casefold() for p in word.split("-") if len(p) > 1 or p.isdigit())
    return Pins(
        codes(question), tuple(dict.fromkeys(names)), tuple(dict.fromkeys(months)), tuple(dict.fromkeys(quarters)),
        tuple(dict.fromkeys(m.group(1).casefold() for m in _VERSION.finditer(question))), _which(question),
        _polar(question),
    )


def _which(question: str) -> tuple[str, ...]:
    """What a "which ..." question asks for one of ("Which garage replaced the
    windscreen?": gara), cut to its first KIND_PREFIX letters ("dentist" / "dental")."""
    m = _WHICH.match(question)
    if m is None or m.group(1).casefold() in _NOT_KINDS:
        return ()
    return (m.group(1).casefold()[:KIND_PREFIX],)


def _polar(question: str) -> bool:
    """A yes/no question; "could you tell me whether ..." still is one."""
    if _POLAR.match(question) is None:
        return False
    return _REQUEST.match(question) is None or _WHETHER.search(question) is not None
