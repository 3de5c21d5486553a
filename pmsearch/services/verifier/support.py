"""Is a sentence's content in its cited sources? Content words, stemmed, counted.

A sentence's content words are the words of its normal form (quotes included) minus
stop words, the generic words an answer adds when it paraphrases a mail (below),
currency and percent words, one-letter words, words holding a digit, words of scripts
written without spaces, and the spans of its figures (they have their own check). Each is reduced by
:func:`stem`, a small suffix stripper applied to both sides alike, and looked up among
the stems of the cited sources' words. Which of them the verifier counts (the
question's words a sentence restates are left out when it adds something its sources
hold) is decided in :mod:`.service`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date

from pmsearch.shared.text import calendar
from pmsearch.shared.text.figures import Figure, normalize_figures, sentence_figures
from pmsearch.shared.text.normalize import is_word_char, normalize
from pmsearch.shared.text.words import LETTERS, STOP_WORDS, WORD, cached_stem, stem, stems_of

# Words an answer adds when it reports what a mail says, without claiming anything the
# mail must contain: the mail itself ("email", "message"), the act of writing or
# receiving it ("wrote", "sent", "told", "asked"), attribution ("according", "states",
# "regarding") and bare answers ("yes", "no"). Compared after stemming, so the list
# covers their inflections. Kept short on purpose: every entry is a word an invented
# claim could hide behind.
GENERIC = frozenset(
    """email mail message said say says according confirmed yes no sent received
    wrote write written asked told mentioned mention states stated regarding about reply
    replied subject day""".split()
)

# Words that only say what kind of figure a number is: an amount's currency, a
# percentage, and "amount" itself ("the total amount was EUR 612.40" against an invoice
# that says "Total EUR 612.40"). The figure itself is checked by the figures check,
# however it is written ("EUR 40", "40 euros", "€40"; "94.1%", "94.1 percent").
FIGURE_WORDS = frozenset(
    """eur euro euros usd dollar dollars gbp chf jpy cad aud sek nok dkk pln czk percent
    pct amount amounts""".split()
)

_GENERIC_STEMS = frozenset(stem(w) for w in GENERIC)

# Words that only say that something happens at a time. In an answer to "when" that gives
# the time ("the refresher training is scheduled for April 4th" for a note saying
# "refresher training for all drivers on 4 April"), the date is the claim and the figures
# check owns it; "scheduled" claims no more than "is on" would.
WHEN_WORDS = frozenset(stem(w) for w in "scheduled planned place takes held happens".split())

# Words that only say how to reach someone. In a sentence that gives an e-mail address or
# a phone number ("contact her via email at sabine.roth@... or by phone at +49 40 ..."
# for a signature line "(sabine.roth@..., +49 40 ...)"), the address and the number are
# the claim and the figures check owns them.
CONTACT_WORDS = frozenset(stem(w) for w in "contact reach phone telephone mobile call email write".split())

# Words that only say that an amount is a price. In a sentence that gives the amount
# ("the early-bird ticket costs EUR 390" for "early-bird price EUR 390"), the amount is
# the claim and the figures check owns it.
PRICE_WORDS = frozenset(stem(w) for w in "cost costs costing price prices priced".split())


def content_words(norm_text: str) -> list[tuple[str, str]]:
    """(word, stem) of each distinct content word of normalised text, in order."""
    out: dict[str, str] = {}
    for w in LETTERS.findall(norm_text):
        if w in out or w in STOP_WORDS or w in GENERIC or w in FIGURE_WORDS:
            continue
        if not w.isascii() and not all(map(is_word_char, w)):
            continue  # a script written without spaces: no words to count
        s = cached_stem(w)
        if s in _GENERIC_STEMS or s in STOP_WORDS:
            continue
        out[w] = s
    # Distinct stems: "claim" and "claims" count once.
    seen: set[str] = set()
    words = []
    for w, s in out.items():
        if s not in seen:
            seen.add(s)
            words.append((w, s))
    return words


def missing_words(
    words: list[tuple[str, str]], stem_sets: list[frozenset[str]]
) -> list[str]:
    return [w for w, s in words if not any(s in stems for stems in stem_sets)]


def unsupported_words(sentence_text: str, sources_texts: Iterable[str]) -> tuple[list[str], int]:
    """The content words of ``sentence_text`` found in none of ``sources_texts``, and how
    many content words it has: ``unsupported = len(missing) / total``.

    Pure, for calibration. The verifier applies the same rule to each sentence (without
    its citation markers) against every part of its cited messages (body, attachments,
    subject) and their senders: pass those texts to get its judgement. It removes the
    sentence when ``total >= MIN_CONTENT_WORDS`` and ``len(missing) / total`` exceeds
    the threshold (``service.UNSUPPORTED_THRESHOLD`` unless given).
    """
    norm = normalize_figures(sentence_text)
    words = content_words(blank_figures(norm.text, sentence_figures(norm, sentence_text)))
    stem_sets = [stems_of(WORD.findall(normalize(t))) for t in sources_texts]
    return missing_words(words, stem_sets), len(words)


_WEEKDAYS = tuple(day[:3] for day in calendar.WEEKDAY_NAMES["en"])
_WEEKDAY = re.compile(
    rf"\b({'|'.join(_WEEKDAYS)})(?:day|sday|nesday|rsday|urday|s|\.)?\b", re.I
)
# A weekday right after a date: "2024-03-13 Wed", "13 March (Wednesday)".
_WEEKDAY_AFTER = re.compile(r"[ ,(]*" + _WEEKDAY.pattern, re.I)


def _weekday(f: Figure) -> int | None:
    """The day of the week of a figure that names a day with its year, else None."""
    for key in f.lookups:
        if key[0] == "dy":
            try:
                return date(key[3], key[2], key[1]).weekday()
            except ValueError:
                return None
    return None


def blank_figures(norm_text: str, figures: Iterable[Figure]) -> str:
    """``norm_text`` with each figure's span replaced by spaces, and with it a weekday
    written right before or after a dated figure when the date falls on that day
    ("2024-03-13 Wed", the passage header's form): the date's checked, so is its day."""
    spans = []
    for f in figures:
        start, end = f.start, f.end
        day = _weekday(f)
        if day is not None:
            before = _WEEKDAY.search(norm_text, max(0, start - 12), start)
            if before and not norm_text[before.end() : start].strip(" ,") and _day(before) == day:
                start = before.start()
            after = _WEEKDAY_AFTER.match(norm_text, end)
            if after and _day(after) == day:
                end = after.end()
        spans.append((start, end))
    pieces = []
    last = 0
    for start, end in spans:
        pieces.append(norm_text[last : max(start, last)])
        pieces.append(" ")
        last = max(end, last)
    if not pieces:
        return norm_text
    pieces.append(norm_text[last:])
    return "".join(pieces)


def _day(m: re.Match[str]) -> int:
    return _WEEKDAYS.index(m.group(1).casefold())
