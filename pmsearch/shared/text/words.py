"""Words: tokens, the English stop words, a light English stemmer (cached) and whether
a text reads as English. Both sides of the trust boundary stem with :func:`stem`, so a
sentence the answerer writes is judged by the verifier with the same reader."""

from __future__ import annotations

import re
from collections.abc import Iterable

WORD = re.compile(r"\w+")
# Words of two letters or more without digits or "_" (a word holding a digit is a figure
# or part of one: the figures check owns it).
LETTERS = re.compile(r"\b[^\W\d_]{2,}\b")

STOP_WORDS = frozenset(
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

# Words a request for mail or a bare answer is made of, which name nothing in it ("give me
# the email about ...", "please tell me", "no").
REQUEST_WORDS = frozenset("email emails mail mails message messages based give tell please no".split())


def prefix_stems(text: str) -> set[str]:
    """The loose reader: content words cut to a five-letter prefix. Crude, symmetric and
    blind to the language ("accepted" meets "acceptance", "Rechnung" "Rechnungen"), for
    ranking passages and choosing citations; the verifier judges with :func:`stem`."""
    return {
        w[:5] for w in (t.casefold() for t in WORD.findall(text))
        if len(w) > 2 and w not in STOP_WORDS and w not in REQUEST_WORDS
    }


_MIN_STEM = 3

# Irregular past forms that paraphrase meets most ("we paid" / "the payment").
_IRREGULAR = {
    "paid": "pay", "made": "make", "bought": "buy", "sold": "sell", "gave": "give", "given": "give",
    "got": "get", "went": "go", "gone": "go", "took": "take", "taken": "take", "came": "come", "found": "find", "kept": "keep",
    "left": "leave", "met": "meet", "held": "hold", "brought": "bring", "spent": "spend",
    "built": "build", "sent": "send", "won": "win", "lost": "lose", "chose": "choose", "chosen": "choose",
}


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


def cached_stem(word: str) -> str:
    s = _STEMS.get(word)
    if s is None:
        if len(_STEMS) > 100_000:
            _STEMS.clear()
        s = _STEMS[word] = stem(word)
    return s


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
    words = LETTERS.findall(text.casefold())
    return not words or sum(w in STOP_WORDS for w in words) / len(words) >= ENGLISH_STOPWORD_SHARE


