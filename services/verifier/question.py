"""What a question pins down, which every answer to it must be about.

A sentence can be true of the message it cites and still answer another question: the
April invoice's amount for "the June invoice", another tenant's claim for "the Golf
claim", a board meeting read off a quarterly review. The question names the thing it
asks about (a code, a name, a month), and a sentence whose cited messages never name it
answers about something else, however well its own words are supported.

The question only ever removes sentences this way, so an attacker who writes it gains
nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.verifier.support import content_words
from shared import asked
from shared.text import calendar, figures

_SENTENCE = re.compile(r"[^.?!]+")
_WORD = re.compile(r"[^\W\d_][\w&]*(?:-[\w&]+)*(?:['’]s\b)?")
# A domain or address the question names (invoice-check.example, jobs@acme.example).
_DOMAIN = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b|\b[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}\b")

MONTHS = list(calendar.MONTH_NAMES["en"])
_MONTH_ABBR = {a: MONTHS[n - 1] for a, n in calendar.MONTH_ABBREVIATIONS["en"]} | {"may": "may"}

# Capitalised words that name nothing in the mail: the asker, courtesy, question words
# that start a clause after a comma.
_NOT_NAMES = frozenset(
    """i i'm i've i'd mr mrs ms dr please thanks hi hello ok okay yes no what who when
    where which why how did do does is are was were can could should would will""".split()
)


# What the question's first clause asks for, by the figure kinds that can give it
# (see figures.py's keys): an amount or count, a date or time, an identifier, a link.
AMOUNT, WHEN, IDENTIFIER, LINK = "an amount", "a date or time", "a number or code", "a link"
# Which account to pay into: an IBAN or an account number, not any code ("Accounts
# payable, invoice INV-2024-0173" names no account). Told by shape, as the answerer does.
ACCOUNT = "an account number"
_ASKS = (
    (LINK, re.compile(r"\b(link|url|web ?address)\b")),
    (ACCOUNT, asked.ASKS_ACCOUNT),
    (IDENTIFIER, re.compile(
        r"\b(what|which)(?:'s| is| was| are)? (?:the |our |my |their )?"
        r"(?:[\w-]+ ){0,3}(number|code|reference|iban|tag|phone)\b"
    )),
    (AMOUNT, re.compile(
        r"^(?:\W*\w+\W+){0,6}?(how (much|many)|what(?:'s| is| was| are)? (?:the )?"
        r"(amount|price|rates?|salary|fee|total)|what .*\b(worth|cost)\b"
        r"|what (?:are|is|do|does|did|will|would|should) (?:we|you|they|i|he|she|it) (?:pay|paying|charge|charging)\b"
        # French and German: "combien", "quel est le montant", "wie viel", "was kostet".
        r"|combien|quel(?:le)?(?: est)? (?:le |la )?(?:montant|prix|coût|tarif|total)"
        r"|wie ?viele?|wie hoch|wie teuer|was kostet|welche[rn]? (?:betrag|preis|summe))"
    )),
    (WHEN, re.compile(
        r"^(?:\W*\w+\W+){0,6}?(when|what time|by when|until when|what date|which day"
        r"|quand|jusqu'à quand|depuis quand|à quelle (?:heure|date)|quel(?:le)? (?:jour|date)"
        r"|wann|bis wann|seit wann|um wie ?viel uhr|an welchem tag|welches datum)(?!\w)"
    )),
)
FIGURE_KINDS = {
    AMOUNT: frozenset({"n"}),
    WHEN: frozenset({"dy", "dn", "dm", "ym", "t", "t12"}),
    IDENTIFIER: frozenset({"c", "e", "u"}),  # or a long number that is not money
    LINK: frozenset({"u"}),
}


# A day named without a figure still says when: "on Thursday", "in June". "Today" and
# "tomorrow" do not: they are the mail's, not the reader's ("the VAT return was filed
# today" does not say when the VAT comes off the account, nor which day that was).
# French and German days and months say when as well ("am Montag", "en juin").
# Not French "mars" alone (also the planet, the chocolate bar).
_WHEN_WORDS = re.compile(
    r"\b("
    + "|".join(sorted(set(calendar.weekday_numbers("en", "fr", "de", abbreviations=False)) | {"sonnabend"}))
    + "|"
    + "|".join(sorted(set(calendar.month_numbers("en", "fr", "de", abbreviations=False)) - {"mars"}))
    + r")s?\b"
)


_DIGITS = re.compile(r"\d{2,}")
_QUARTER = re.compile(r"Q[1-4]")
_POLAR = re.compile(
    r"\W*(?:did|does|do|is|are|was|were|has|have|had|can|could|will|would|should|shall|may|must)(?:n't)?\b", re.I
)
# "Can you check my mail and tell me when ...": a request, not a yes/no question.
_REQUEST = re.compile(
    r"\W*(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:check|tell|find|look|show|give|let|search|see|say)\b",
    re.I,
)
_WHETHER = re.compile(r"\b(?:if|whether)\b", re.I)
_CURRENCY = re.compile(r"eur|usd|gbp|chf|[€$£]")


@dataclass(frozen=True, slots=True)
class Pinned:
    """What the question pins down: codes, proper names and months, in lower case; and
    the kind of figure its first clause asks for, if any."""

    codes: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    months: tuple[str, ...] = ()
    asks: str | None = None
    words: frozenset[str] = frozenset()  # stems of its content words (see support.content_words)
    # A yes/no question ("Did the insurer ask for new bank details?"): an answer's
    # restated words are then its claim, not only its subject.
    polar: bool = False
    # A quarter ("the Q2 review"): the question's subject, which an answer may repeat
    # without its sources writing it (they may say "the quarterly review").
    quarters: tuple[str, ...] = ()
    # Which version of a document ("the final invoice", "the corrected invoice"): the
    # estimate does not give the final invoice's amount.
    versions: tuple[str, ...] = ()
    # What a "which" question asks for one of ("Which garage ...": gara), as the first
    # letters a paraphrase keeps: the thread must name it, unless the answer gives its
    # identifier ("container MSKU 448120").
    which: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.codes or self.names or self.months or self.versions or self.which)


def _month(word: str) -> str | None:
    w = word.casefold().rstrip(".")
    if w in MONTHS:
        return w
    return _MONTH_ABBR.get(w) if len(w) in (3, 4) else None


def pinned(question: str) -> Pinned:
    """Codes, then capitalised words past a clause's first word (names), then months
    and quarters.

    A clause's first word is capitalised by grammar, not because it names something, so
    only a month counts there. Codes are matched as codes, not again as names.
    """
    codes = asked.codes(question)
    names: list[str] = [m.group().casefold() for m in _DOMAIN.finditer(question)]
    without_codes = _DOMAIN.sub(" ", asked.CODE.sub(" ", question))
    months: list[str] = []
    quarters: list[str] = []
    for clause in _SENTENCE.finditer(without_codes):
        for i, match in enumerate(_WORD.finditer(clause.group())):
            word = re.sub(r"['’]s$", "", match.group())
            if not word[:1].isupper():
                continue
            month = _month(word)
            if month is not None:
                if word != "May" or i > 0:  # "May I ..." asks, it names no month
                    months.append(month)
                continue
            if _QUARTER.fullmatch(word):
                quarters.append(word.casefold())
                continue
            if i == 0 or word.casefold() in _NOT_NAMES:
                continue
            # "Munich-Lyon", "M-AC": each part is a name; a lone letter ("hall B") is
            # too short to look for.
            names.extend(p.casefold() for p in word.split("-") if len(p) > 1 or p.isdigit())
    words = frozenset(stem for _, stem in content_words(figures.normalize_figures(question).text))
    return Pinned(codes, tuple(dict.fromkeys(names)), tuple(dict.fromkeys(months)), asks(question), words,
                  _polar(question), tuple(dict.fromkeys(quarters)), versions(question), which_kind(question))


# A version of a document the mail must name for the question to be about it; "new" and
# "latest" are how people ask about the current one, and any message may be that.
_VERSION = re.compile(r"\b(final|corrected|revised|amended)\s+[^\W\d_]", re.I)


def versions(question: str) -> tuple[str, ...]:
    """The question's version words ("final", "corrected"), lower case."""
    return tuple(dict.fromkeys(m.group(1).casefold() for m in _VERSION.finditer(question)))


KIND_PREFIX = 4
# "Which garage replaced the windscreen?": the answer names a garage.
_WHICH = re.compile(r"^\W*which ([a-z][\w-]*)\b", re.I)
_NOT_KINDS = frozenset("of one ones is are was were do does did".split())


def which_kind(question: str) -> tuple[str, ...]:
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


def gives(kind: str, sentence: str, scanned: Scanned | None = None, months: tuple[str, ...] = ()) -> bool:
    """Whether ``sentence`` holds a figure of the ``kind`` a question asks for.
    ``scanned``: its normalised text and figures, when the caller has read them.
    ``months``: the question's own months, which name what it asks about and do not say
    when ("the VAT return for March" does not say when the March VAT is debited)."""
    norm_text, found = scanned or _scan(sentence)
    if kind == ACCOUNT:
        return asked.gives(asked.ACCOUNT, sentence)
    keys = [key for f in found for p in (f, *f.parts) for key in p.lookups]
    if kind == IDENTIFIER:
        # An amount is no identifier: "the number of the credit note" is not EUR 1,260.
        return any(key[0] in "ceu" for key in keys) or any(_is_reference(norm_text, f) for f in found)
    if {key[0] for key in keys} & FIGURE_KINDS[kind]:
        return True
    if kind == AMOUNT:  # a number the figures scanner read as part of a code ("1553,in")
        return any(key[0] == "c" and _DIGITS.search(key[1]) for key in keys)
    return kind == WHEN and any(m.group(1) not in months for m in _WHEN_WORDS.finditer(sentence.casefold()))


def gives_contact(sentence: str, scanned: Scanned | None = None) -> bool:
    """Whether ``sentence`` holds an e-mail address or a number long enough to be a
    phone number."""
    norm_text, found = scanned or _scan(sentence)
    return any(key[0] == "e" for f in found for key in f.lookups) or any(_is_reference(norm_text, f) for f in found)


# A sentence's normalised text and its figures as the scanner read them.
Scanned = tuple[str, list[figures.Figure]]


def _scan(sentence: str) -> Scanned:
    norm = figures.normalize_figures(sentence)
    return norm.text, figures.sentence_figures(norm, sentence)


def _is_reference(text: str, figure: figures.Figure) -> bool:
    """A number long enough to identify something (a phone or account group), not money."""
    if any(key[0] != "n" for key in figure.lookups):
        return False  # a date or a time
    span = text[figure.start:figure.end]
    around = text[max(0, figure.start - 5):figure.start] + text[figure.end:figure.end + 5]
    return sum(ch.isdigit() for ch in span) >= 3 and not _CURRENCY.search(around)


def asks(question: str) -> str | None:
    """The kind of figure the question's first clause asks for (AMOUNT, WHEN, ...)."""
    first = re.split(r"[?;]|,? and (?=how|when|what|who|where|which|by)", question.casefold(), maxsplit=1)[0]
    for kind, pattern in _ASKS:
        if pattern.search(first):
            return kind
    return None
