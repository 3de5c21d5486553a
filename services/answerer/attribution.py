"""Citations by code: the evidence messages that support a sentence best.

A small model writes the right sentence and points at the wrong passages (those that
mention the photos, not the one that accepts the claim). So the answerer attributes each
sentence itself: it picks the one message sharing most of the sentence's quoted phrases,
figures and content words, each word weighed by how few of the run's messages hold it
(every message of the Golf thread says "Golf", "claim" and "insurer"; one says
"accepted"). One: a sentence stitched from two messages (an amount from
one invoice, a purpose from another's budget) would pass a check against both, while
against its best single source the stray figure is found missing. A sentence that truly
needs two messages (two versions of a date) is written as two sentences (the prompt
says so). A phrase quoted word for word outweighs everything else: the verifier keeps a quote only when a cited
message holds it, and a message sharing as many words may not. The verifier then checks
the sentence against exactly these sources, as it would check the model's own choice.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from shared.messages import EvidenceMessage
from shared.passages import own_text, sender_name
from shared.text import calendar
from shared.text.quotes import extract_quotes
from shared.text.words import prefix_stems as stems
from shared.textcache import cached_text

MAX_SOURCES = 1  # see the module docstring
FIGURE_WEIGHT = 3  # a shared amount or code says more than a shared word
# Words that join a sentence and name nothing (as :func:`shared.text.words.prefix_stems` cuts
# them): that one message says "because" is no sign it says the sentence.
_FUNCTION_WORDS = frozenset(
    "becau since altho thoug while unles wheth also just still even only very same other some".split()
)
QUOTE_WEIGHT = 10  # a phrase quoted word for word points at the message that holds it

_FIGURE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|https?://\S+|\b[\w/-]*\d[\w/.,:-]*\b")


# English and German month names and their abbreviations ("1. April", "3 Mar.").
_MONTH_NUMBER = calendar.month_numbers("en", "de")
_MONTH = rf"({'|'.join(sorted(_MONTH_NUMBER, key=len, reverse=True))})\b\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th|\.)?"
# "19 April 2024", "April 19, 2024", "2024-04-19": the date is one figure. Read as two
# numbers, "until 19 April 2024" shares both with "19 March 2024" and only one with the
# message that says "from 8 to 19 April" (its year is its date's).
_DATES = (
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+(\d{{4}}))?\b", re.I), (1, 2, 3)),
    (re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?:,?\s+(\d{{4}})\b)?", re.I), (2, 1, 3)),
    (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"), (3, 2, 1)),
)


def _dates(text: str) -> tuple[set[str], str]:
    """The dates ``text`` names, as "date:MM-DD" and "YYYY" keys, and the text without
    them."""
    keys: set[str] = set()

    def key(m: re.Match[str], order: tuple[int, int, int]) -> str:
        day, month, year = (m.group(i) for i in order)
        number = int(month) if month.isdigit() else _MONTH_NUMBER[month.casefold()]
        try:
            date(2024, number, int(day))  # a leap year: 29 February is a date
        except ValueError:
            return m.group(0)
        keys.add(f"date:{number:02d}-{int(day):02d}")
        keys.update([year] if year else [])
        return " "

    for pattern, order in _DATES:
        text = pattern.sub(lambda m, order=order: key(m, order), text)
    return keys, text


def figures(text: str) -> set[str]:
    """Tokens carrying a digit (amounts, dates, times, codes), addresses and links, in a
    form where "2,115.50" and "2115.50" meet; a date is one figure ("date:04-19") and
    its year another."""
    out, text = _dates(text)
    for token in _FIGURE.findall(text):
        t = token.casefold().rstrip(".,:;)")
        t = re.sub(r"(?<=\d)[,\u202f ](?=\d{3}\b)", "", t)
        t = re.sub(r"\.00$", "", t)
        t = re.sub(r"(?<=\d)(?:st|nd|rd|th)$", "", t)  # "April 9th" meets "9 April"
        if t:
            out.add(t)
    return out


def _flat(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def quotes(text: str) -> set[str]:
    """The phrases ``text`` quotes (:func:`shared.text.quotes.extract_quotes`, as the
    verifier reads them), case and spacing folded; a phrase of under three characters
    tells no source from another."""
    return {flat for q in extract_quotes(text) for flat in [_flat(q.text)] if len(flat) >= 3}


@dataclass(frozen=True)
class _Source:
    message_id: str
    figures: frozenset[str]
    stems: frozenset[str]
    text: str  # folded, for quoted phrases

    def holds(self, phrases: set[str]) -> set[str]:
        return {q for q in phrases if q in self.text}


def _source(m: EvidenceMessage) -> _Source:
    # Built for every sentence from every evidence message: see shared.textcache.
    # The date as the passage header shows it: "when did we send the photos?" is
    # answered by the date of the message that sent them (the verifier counts a
    # message's own date as support too).
    sent = m.date.strftime("%Y-%m-%d %Y") if m.date else ""
    return _message_source(m.message_id, (sent, m.subject, m.sender, m.body, *(a.text for a in m.attachments)))


@cached_text(maxsize=512)
def _message_source(message_id: str, parts: tuple[str, ...]) -> _Source:
    sent, subject, sender, body, *attachments = parts
    text = "\n".join([subject, sender, own_text(body), *attachments])
    return _Source(message_id, frozenset(figures(text) | figures(sent)), frozenset(stems(text)), _flat(text))


def attribute(sentence: str, evidence: Sequence[EvidenceMessage], preferred: Sequence[str] = ()) -> list[str]:
    """The message that supports ``sentence`` best, as a list (empty when no message
    shares anything with it). A message whose sender the sentence names, then
    ``preferred`` (the model's choice), wins ties."""
    want_quotes = quotes(sentence)
    want_figures = figures(sentence)
    want_stems = stems(sentence)
    rank = {mid: i for i, mid in enumerate(preferred)}

    # What a person chose or said ("Frank went for the 24-month renewal") is best
    # supported by that person's own message: among messages sharing as much, the one
    # whose sender the sentence names, before the model's choice (the question to Frank
    # names him as well).
    said_by = {m.message_id for m in evidence if _first_name(m.sender) in want_stems}

    sources = list(map(_source, evidence))
    weight = _rarity(want_stems - _FUNCTION_WORDS, sources)

    def gain(s: _Source) -> tuple[float, int, bool, int]:
        shared = want_stems & s.stems
        covered = (
            QUOTE_WEIGHT * len(s.holds(want_quotes))
            + FIGURE_WEIGHT * len(want_figures & s.figures)
            + sum(weight.get(w, 0.0) for w in shared)
        )
        # Words every message shares weigh nothing; their count still breaks a tie.
        count = len(shared) + len(want_figures & s.figures) + len(s.holds(want_quotes))
        return (round(covered, 9), count, s.message_id in said_by, -rank.get(s.message_id, len(rank)))

    scored = [(gain(s), s.message_id) for s in sources]
    if not scored:
        return []
    (_, count, *_), best = max(scored, key=lambda t: t[0])
    return [best][:MAX_SOURCES] if count else []


def _rarity(words: set[str], sources: list[_Source]) -> dict[str, float]:
    """How much sharing each word says about a message: log((n + 1) / (messages holding
    it + 1)) over the run's evidence. "Golf", "claim" and "insurer" are in every message
    of the Golf thread; "accepted" is in the one that accepts it."""
    n = len(sources)
    return {w: math.log((n + 1) / (sum(w in s.stems for s in sources) + 1)) for w in words}


def _first_name(sender: str) -> str:
    """The sender's first name, as a stem, when the sender is a person: the name is
    also in the address ("Frank Li <frank@...>", not "Northwind Insurance Claims
    <claims@...>")."""
    words = sender_name(sender).split()
    local = sender.rpartition("<")[2].split("@")[0].casefold()
    if not words or words[0].casefold() not in local:
        return ""
    first = stems(words[0])
    return first.pop() if first else ""


def echoes_header(sentence: str, m: EvidenceMessage) -> bool:
    """Whether ``sentence`` holds nothing but its source's header: who sent it, the
    subject, the date ("Katrin Klein, Re: VAT return March 2024" for "when does the VAT
    come off our account?"). The small model copies a passage's header line as an
    answer; every word of it is the message's, and it states nothing."""
    # The date as the passages' header shows it too ("2006-09-27 Wed").
    sent = f"{m.date.day} {m.date:%B %Y} {m.date:%Y-%m-%d} {m.date:%a %A}" if m.date else ""
    head = f"{sender_name(m.sender)} {m.subject} {sent}"
    return bool(stems(sentence) or figures(sentence)) and stems(sentence) <= stems(head) and figures(sentence) <= figures(head)
