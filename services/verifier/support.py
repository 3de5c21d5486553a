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

from services.verifier.figures import Figure, normalize_figures, sentence_figures
from services.verifier.normalize import is_word_char, normalize

_WORD = re.compile(r"\w+")
# Words of two letters or more without digits or "_" (a word holding a digit is a figure
# or part of one: the figures check owns it).
_LETTERS = re.compile(r"\b[^\W\d_]{2,}\b")

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can cannot could did do does doing done down
    during each either else even ever every few for from further had has have having he her
    here hers herself him himself his how however i if in into is it its itself just me
    might more most must my myself neither nor not now of off on once only or other our
    ours ourselves out over own per same shall she should since so some such than that the
    their theirs them themselves then there these they this those through thus to too under
    until up upon us very via was we were what whatever when where whether which while who
    whom whose why will with within without would yet you your yours yourself yourselves
    ll ve re don doesn didn isn aren wasn weren hasn haven hadn won wouldn shouldn couldn
    mustn let lets""".split()
)

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

_MIN_STEM = 3

# Irregular past forms that paraphrase meets most ("we paid" / "the payment").
_IRREGULAR = {
    "paid": "pay", "made": "make", "bought": "buy", "sold": "sell", "gave": "give", "given": "give",
    "got": "get", "went": "go", "gone": "go", "took": "take", "taken": "take", "came": "come", "found": "find", "kept": "keep",
    "left": "leave", "met": "meet", "held": "hold", "brought": "bring", "spent": "spend",
    "built": "build", "sent": "send", "won": "win", "lost": "lose", "chose": "choose", "chosen": "choose",
}


def done_form(word: str) -> bool:
    """Whether ``word`` (lower case) is a past form: an irregular one ("paid", "sent") or
    one in -ed ("accepted"). A past form says an act happened; "payment" does not."""
    return word in _IRREGULAR or (word.endswith("ed") and len(word) > _MIN_STEM + 2)


def stem(word: str) -> str:
    """A light English stem: one inflection (-s, -es, -ies, -ed, -ied, -ing), then one
    derivational suffix (-ation, -ion, -ment, -ness, -ance, -ence, -able, -er, -ly),
    then a final -e and a doubled final consonant. Symmetric use matters more than linguistics.
    """
    w = _IRREGULAR.get(word, word)
    if len(w) <= _MIN_STEM:
        return w
    for suffix, repl in (
        ("ingly", ""), ("edly", ""), ("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""),
    ):
        if w.endswith(suffix) and len(w) - len(suffix) + len(repl) >= _MIN_STEM:
            w = w[: len(w) - len(suffix)] + repl
            break
    else:
        if w.endswith("es") and w[-3:-2] in ("s", "x", "z") or w.endswith(("ches", "shes")):
            w = w[:-2]
        elif w.endswith("s") and not w.endswith(("ss", "us", "is")) and len(w) > _MIN_STEM:
            w = w[:-1]
    # The doubled consonant goes before and after the derivational suffix, so that
    # "transferred" (transferr) and "transfer" meet, and "runner" and "running" do.
    w = _undouble(w)
    for suffix in ("ation", "ion", "ment", "ness", "ance", "ence", "able", "ible", "er", "ly"):
        if w.endswith(suffix) and len(w) - len(suffix) >= _MIN_STEM:
            w = w[: -len(suffix)]
            break
    if w.endswith("e") and len(w) > _MIN_STEM:
        w = w[:-1]
    return _undouble(w)


def _undouble(w: str) -> str:
    if len(w) > _MIN_STEM and w[-1] == w[-2] and w[-1] not in "aeiouls":
        return w[:-1]
    return w


_STEMS: dict[str, str] = {}
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


def cached_stem(word: str) -> str:
    s = _STEMS.get(word)
    if s is None:
        if len(_STEMS) > 100_000:
            _STEMS.clear()
        s = _STEMS[word] = stem(word)
    return s


def content_words(norm_text: str) -> list[tuple[str, str]]:
    """(word, stem) of each distinct content word of normalised text, in order."""
    out: dict[str, str] = {}
    for w in _LETTERS.findall(norm_text):
        if w in out or w in STOPWORDS or w in GENERIC or w in FIGURE_WORDS:
            continue
        if not w.isascii() and not all(map(is_word_char, w)):
            continue  # a script written without spaces: no words to count
        s = cached_stem(w)
        if s in _GENERIC_STEMS or s in STOPWORDS:
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


def stems_of(tokens: Iterable[str]) -> frozenset[str]:
    """Stems of a source's word tokens (already normalised)."""
    distinct = set(tokens)
    new = distinct - _STEMS.keys()
    if new:
        if len(_STEMS) > 100_000:
            _STEMS.clear()
            new = distinct
        _STEMS.update((t, stem(t)) for t in new)
    return frozenset(map(_STEMS.__getitem__, distinct))


# English prose is about two words in five from STOPWORDS; German, French or Russian mail
# holds almost none of them (a stray "in" or "was").
ENGLISH_STOPWORD_SHARE = 0.15


def in_english(text: str) -> bool:
    """Whether ``text`` reads as English: enough of its words are English stop words.
    Word overlap judges a paraphrase only between two texts in one language."""
    words = _LETTERS.findall(text.casefold())
    return not words or sum(w in STOPWORDS for w in words) / len(words) >= ENGLISH_STOPWORD_SHARE


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
    stem_sets = [stems_of(_WORD.findall(normalize(t))) for t in sources_texts]
    return missing_words(words, stem_sets), len(words)


_WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_WEEKDAY = re.compile(
    r"\b(mon|tue|wed|thu|fri|sat|sun)(?:day|sday|nesday|rsday|urday|s|\.)?\b", re.I
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
