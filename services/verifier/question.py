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
# "week 15", "calendar week 15", "wk 15", German "KW 15": as the question writes it, and as
# a message may (see week_names).
_WEEK = re.compile(r"\b(?:(?:calendar\s+)?week|wk|kw|cw)\s?(\d{1,2})\b", re.I)
_QUARTERLY = re.compile(r"\b(quarterly)\s+([^\W\d_]+)", re.I)
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
    # A quarter ("the Q2 review"): its mail may name it, or say what the question calls
    # it ("quarterly review": these words, in lower case).
    quarters: tuple[str, ...] = ()
    quarterly: tuple[str, ...] = ()
    # A numbered week ("in week 15"): the weekly report for week 12 does not answer it.
    weeks: tuple[int, ...] = ()
    # Which one of a kind of thing: its version ("the final invoice", "the corrected
    # invoice"), as a word, and what an identifier is of ("my seat number", "the alarm
    # code"), as a stem. The estimate does not give the final invoice's amount, nor a
    # request for a correction the corrected invoice's, nor a flight number the seat.
    versions: tuple[str, ...] = ()
    identifies: tuple[str, ...] = ()
    # Whose words the question asks for ("What did Tom say about my draft?"): each a
    # name's words, in lower case. Bob's message to Tom is not what Tom said.
    speakers: tuple[tuple[str, ...], ...] = ()
    # What kind of the thing asked about ("When is the board meeting?": board), as the
    # first letters a paraphrase keeps ("dentist" / "dental": dent): a quarterly
    # review's date is not the board meeting's.
    kinds: tuple[str, ...] = ()
    # What a "which" question asks for one of ("Which garage ...": gara): the thread must
    # name it, unless the answer gives its identifier ("container MSKU 448120").
    which: tuple[str, ...] = ()
    # What a "how much ..." question asks the amount of ("How much VAT do we owe?": vat).
    # Not a pin on the thread (see __bool__): it only says which figures give the amount.
    amount_of: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(
            self.codes or self.names or self.months or self.quarters or self.weeks or self.versions or self.identifies
            or self.speakers or self.kinds or self.which
        )


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
    weeks = tuple(dict.fromkeys(int(m.group(1)) for m in _WEEK.finditer(question)))
    polar = _polar(question)
    return Pinned(codes, tuple(dict.fromkeys(names)), tuple(dict.fromkeys(months)), asks(question), words,
                  polar, tuple(dict.fromkeys(quarters)), _quarterly(question) if quarters else (), weeks,
                  versions(question), identifies(question), speakers(question), kinds(question),
                  which_kind(question), amount_of(question))


# A version of a document the mail must name for the question to be about it; "new" and
# "latest" are how people ask about the current one, and any message may be that.
_VERSION = re.compile(r"\b(final|corrected|revised|amended)\s+[^\W\d_]", re.I)
_IDENTIFIER = re.compile(
    r"\b(?:what|which)(?:'s| is| was| are)? (?:the |our |my |their |your )?((?:[\w'-]+ ){1,3})"
    r"(?:number|code|reference|password|tag)\b",
    re.I,
)
# Words before an identifier that say nothing of what it is of; a phone or fax number's
# shape says what it is, and its mail need not call it one.
_NOT_QUALIFIERS = frozenset("the our my their your new current a an of phone mobile telephone tel fax".split())


def versions(question: str) -> tuple[str, ...]:
    """The question's version words ("final", "corrected"), lower case."""
    return tuple(dict.fromkeys(m.group(1).casefold() for m in _VERSION.finditer(question)))


def identifies(question: str) -> tuple[str, ...]:
    """The word naming what the question's identifier is of ("seat" in "what's my seat
    number"), lower case; none when it names nothing."""
    m = _IDENTIFIER.search(question)
    words = [w for w in m.group(1).casefold().split() if w not in _NOT_QUALIFIERS] if m else []
    return (re.sub(r"['’]s$", "", words[-1]),) if words else ()


_SAID = re.compile(
    r"\b(?i:what (?:did|does|do|has|have)) ((?:[A-Z][\w'-]*,? (?:and |& )?){1,4})"
    r"(?:say|said|write|wrote|written|reply|replied|answer|answered|think|thought|suggest|suggested"
    r"|propose|proposed|decide|decided|tell|told|mean|respond|responded|reply)\b"
)


def speakers(question: str) -> tuple[tuple[str, ...], ...]:
    """The people whose words the question asks for ("What did Tom say ...": tom;
    "What did Tom and Priya reply": tom, priya)."""
    m = _SAID.search(question)
    if m is None:
        return ()
    names = re.split(r",? (?:and|&) |, ", m.group(1).strip(" ,"))
    return tuple(tuple(n.casefold().split()) for n in names if n and n.casefold() not in _NOT_NAMES)


_WHEN_IS = re.compile(r"^\W*(?:when|where|what time) (?:is|was|are|were) (?:the|my|our|your) ([^?,]+)", re.I)
# Where the thing's name ends: a preposition, a verb going on ("coming", "down", "due").
_NAME_ENDS = re.compile(
    r"^(?:for|in|on|at|of|with|to|from|by|and|or|down|up|off|out|due|over"
    r"|coming|going|happening|starting|taking|arriving|leaving|being|getting|held|open|closed)$",
    re.I,
)
# Words that say which one of a kind, not what kind: "my next review", "the new office".
_WHICH_ONE = frozenset("next last new old latest upcoming first second current this that same other".split())


KIND_PREFIX = 4
# "Which garage replaced the windscreen?": the answer names a garage.
_WHICH = re.compile(r"^\W*which ([a-z][\w-]*)\b", re.I)
_NOT_KINDS = frozenset("of one ones is are was were do does did".split())


def kinds(question: str) -> tuple[str, ...]:
    """The words before the head of the thing a "when / where is the ..." question asks
    about, cut to their first KIND_PREFIX letters ("When is the board meeting?": boar);
    names, quarters and "quarterly" are pinned apart."""
    m = _WHEN_IS.match(question)
    if m is None:
        return ()
    words: list[str] = []
    for word in m.group(1).split():
        if _NAME_ENDS.match(word):
            break
        words.append(word)
    return tuple(
        w.casefold()[:KIND_PREFIX] for w in words[:-1]
        if w.islower() and w.casefold() not in _WHICH_ONE and w.casefold() != "quarterly"
    )


def which_kind(question: str) -> tuple[str, ...]:
    """What a "which ..." question asks for one of ("Which garage replaced the
    windscreen?": gara), cut like :func:`kinds`."""
    m = _WHICH.match(question)
    if m is None or m.group(1).casefold() in _NOT_KINDS:
        return ()
    return (m.group(1).casefold()[:KIND_PREFIX],)


# "How much VAT ...": the word after "how much", unless it goes on with a verb.
_HOW_MUCH = re.compile(r"\bhow much ([^\W\d_][\w-]*)", re.I)
_NOT_AMOUNTS_OF = frozenset(
    "do does did is was are were will would should can could have has had money more of in for".split()
)
# A figure a part of the total is included in, added to or left out of: "EUR 2,340.50
# including VAT" is the total, not the VAT; "EUR 4,870.00 including 19% VAT" neither.
_PART_OF = r"(?:including|incl\.?|inclusive of|inc\.|plus|excluding|excl\.?|exclusive of|net of|before|after|without)"


def amount_of(question: str) -> tuple[str, ...]:
    """What a "how much ..." question asks the amount of ("How much VAT ...": vat)."""
    m = _HOW_MUCH.search(question)
    if m is None or m.group(1).casefold() in _NOT_AMOUNTS_OF:
        return ()
    return (m.group(1).casefold(),)


def _part_of_spans(norm_text: str, of: tuple[str, ...]) -> list[tuple[int, int]]:
    """Spans of "including / plus / excluding [the] [19%] <of>" in normalised text."""
    if not of:
        return []
    nouns = "|".join(re.escape(noun) for noun in of)
    pattern = re.compile(rf"\b{_PART_OF}\s+(?:the\s+)?(?:\d+(?:[.,]\d+)?\s?%\s+)?(?:{nouns})\b")
    return [m.span() for m in pattern.finditer(norm_text)]


def _qualified(norm_text: str, figure: figures.Figure, spans: list[tuple[int, int]]) -> bool:
    """Whether ``figure`` is a total a part is included in or left out of (it stands just
    before such a phrase), or the rate inside one."""
    return any(
        start <= figure.start < end or (figure.end <= start and not norm_text[figure.end:start].strip(" ("))
        for start, end in spans
    )


def week_names(week: int) -> tuple[str, ...]:
    """How a message names a numbered week: "week 15", "KW 15", "wk 15", "CW 15"."""
    return tuple(f"{word} {week}" for word in ("week", "kw", "wk", "cw"))


def _quarterly(question: str) -> tuple[str, ...]:
    """"quarterly" and the word it qualifies ("the Q2 quarterly review": quarterly, review)."""
    m = _QUARTERLY.search(question)
    return (m.group(1).casefold(), m.group(2).casefold()) if m else ()


def _polar(question: str) -> bool:
    """A yes/no question; "could you tell me whether ..." still is one."""
    if _POLAR.match(question) is None:
        return False
    return _REQUEST.match(question) is None or _WHETHER.search(question) is not None


def gives(
    kind: str, sentence: str, scanned: Scanned | None = None, months: tuple[str, ...] = (), of: tuple[str, ...] = ()
) -> bool:
    """Whether ``sentence`` holds a figure of the ``kind`` a question asks for.
    ``scanned``: its normalised text and figures, when the caller has read them.
    ``months``: the question's own months, which name what it asks about and do not say
    when ("the VAT return for March" does not say when the March VAT is debited).
    ``of``: what an amount is asked of (:func:`amount_of`); a total "including" it does
    not give it."""
    norm_text, found = scanned or _scan(sentence)
    if kind == AMOUNT and of:
        spans = _part_of_spans(norm_text, of)
        found = [f for f in found if not _qualified(norm_text, f, spans)]
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
