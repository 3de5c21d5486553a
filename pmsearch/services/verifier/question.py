"""What a question pins down, which every answer to it must be about, and whether a
sentence gives the kind of figure it asks for.

A sentence can be true of the message it cites and still answer another question: the
April invoice's amount for "the June invoice", another tenant's claim for "the Golf
claim". The question names the thing it asks about (a code, a name, a month), and a
sentence whose cited messages never name it answers about something else, however well
its own words are supported. The question is read by the shared toolkit
(:mod:`pmsearch.shared.text.question`), as the planner and the answerer read it; this module adds
what only the verifier needs: the question's words as the support check stems them,
and whether a sentence's figures (read by :mod:`pmsearch.shared.text.figures`) are of the asked
kind.

The question only ever removes sentences this way, so an attacker who writes it gains
nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pmsearch.services.verifier.support import content_words
from pmsearch.shared.text import calendar, figures
from pmsearch.shared.text import question as asked
from pmsearch.shared.text.shapes import shows

MONTHS = asked.MONTHS

# What the question's first clause asks for, by the figure kinds that can give it
# (see figures.py's keys), as the removal names it: an amount or count, a date or time,
# an identifier, a link. Which account to pay into is an IBAN or an account number, not
# any code ("Accounts payable, invoice INV-2024-0173" names no account): told by shape,
# as the answerer does.
AMOUNT, WHEN, IDENTIFIER, LINK = "an amount", "a date or time", "a number or code", "a link"
ACCOUNT = "an account number"
_ASKED = {
    asked.AMOUNT: AMOUNT, asked.WHEN: WHEN, asked.IDENTIFIER: IDENTIFIER, asked.LINK: LINK, asked.ACCOUNT: ACCOUNT,
}
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


def pinned(question: str) -> Pinned:
    """What the question pins (:func:`pmsearch.shared.text.question.pins`), the figure its first
    clause asks for, and the stems of its content words."""
    p = asked.pins(question)
    kind = asked.asks(question)
    words = frozenset(stem for _, stem in content_words(figures.normalize_figures(question).text))
    return Pinned(p.codes, p.names, p.months, _ASKED.get(kind) if kind else None, words, p.polar, p.quarters,
                  p.versions, p.which)


def gives(kind: str, sentence: str, scanned: Scanned | None = None, months: tuple[str, ...] = ()) -> bool:
    """Whether ``sentence`` holds a figure of the ``kind`` a question asks for.
    ``scanned``: its normalised text and figures, when the caller has read them.
    ``months``: the question's own months, which name what it asks about and do not say
    when ("the VAT return for March" does not say when the March VAT is debited)."""
    norm_text, found = scanned or _scan(sentence)
    if kind == ACCOUNT:
        return shows(asked.ACCOUNT, sentence)
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
