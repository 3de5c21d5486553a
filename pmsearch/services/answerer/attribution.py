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
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from pmsearch.shared.messages import EvidenceMessage
from pmsearch.shared.text import amounts, figures
from pmsearch.shared.text.amounts import as_amount
from pmsearch.shared.text.mail import own_text, sender_name
from pmsearch.shared.text.quotes import extract_quotes
from pmsearch.shared.text.words import prefix_stems as stems
from pmsearch.shared.textcache import cached_text

MAX_SOURCES = 1  # see the module docstring
FIGURE_WEIGHT = 3  # a shared amount or code says more than a shared word
# Words that join a sentence and name nothing (as :func:`pmsearch.shared.text.words.prefix_stems` cuts
# them): that one message says "because" is no sign it says the sentence.
_FUNCTION_WORDS = frozenset(
    "becau since altho thoug while unles wheth also just still even only very same other some".split()
)
QUOTE_WEIGHT = 10  # a phrase quoted word for word points at the message that holds it

def sentence_figures(text: str) -> list[figures.Figure]:
    """The figures of a sentence as the verifier reads them (:mod:`pmsearch.shared.text.figures`),
    amounts with their currency and scale."""
    norm = figures.normalize_figures(text)
    return [as_amount(f, norm.text) for f in figures.sentence_figures(norm, text)]


def figure_keys(text: str) -> frozenset[figures.Key]:
    """Every figure key a source text supports, as the verifier reads it."""
    norm = figures.normalize_figures(text).text
    return frozenset(figures.source_keys(norm) | amounts.source_keys(norm))


def held(wanted: list[figures.Figure], keys: frozenset[figures.Key]) -> int:
    """How many of ``wanted`` the keys support: what the verifier's figures check finds."""
    return sum(figures.supported(f, [keys]) for f in wanted)


def _flat(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def quotes(text: str) -> set[str]:
    """The phrases ``text`` quotes (:func:`pmsearch.shared.text.quotes.extract_quotes`, as the
    verifier reads them), case and spacing folded; a phrase of under three characters
    tells no source from another."""
    return {flat for q in extract_quotes(text) for flat in [_flat(q.text)] if len(flat) >= 3}


@dataclass(frozen=True)
class _Source:
    message_id: str
    keys: frozenset[figures.Key]
    stems: frozenset[str]
    text: str  # folded, for quoted phrases

    def holds(self, phrases: set[str]) -> set[str]:
        return {q for q in phrases if q in self.text}


def _source(m: EvidenceMessage) -> _Source:
    # Built for every sentence from every evidence message: see shared.textcache.
    # The date as the passage header shows it: "when did we send the photos?" is
    # answered by the date of the message that sent them (the verifier counts a
    # message's own date as support too).
    sent = f"{m.date.day}/{m.date.month}/{m.date.year}" if m.date else ""
    return _message_source(m.message_id, (sent, m.subject, m.sender, m.body, *(a.text for a in m.attachments)))


@cached_text(maxsize=512)
def _message_source(message_id: str, parts: tuple[str, ...]) -> _Source:
    sent, subject, sender, body, *attachments = parts
    text = "\n".join([subject, sender, own_text(body), *attachments])
    keys = figure_keys(text)
    if sent:
        day, month, year = map(int, sent.split("/"))
        keys |= frozenset(figures.date_keys(day, month, year))
    return _Source(message_id, keys, frozenset(stems(text)), _flat(text))


def attribute(sentence: str, evidence: Sequence[EvidenceMessage], preferred: Sequence[str] = ()) -> list[str]:
    """The message that supports ``sentence`` best, as a list (empty when no message
    shares anything with it). A message whose sender the sentence names, then
    ``preferred`` (the model's choice), wins ties."""
    want_quotes = quotes(sentence)
    want_figures = sentence_figures(sentence)
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
            + FIGURE_WEIGHT * held(want_figures, s.keys)
            + sum(weight.get(w, 0.0) for w in shared)
        )
        # Words every message shares weigh nothing; their count still breaks a tie.
        count = len(shared) + held(want_figures, s.keys) + len(s.holds(want_quotes))
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
    wanted = sentence_figures(sentence)
    return bool(stems(sentence) or wanted) and stems(sentence) <= stems(head) and held(wanted, figure_keys(head)) == len(wanted)
