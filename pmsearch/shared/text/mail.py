"""How a message reads as its sender's own words: what the answerer attributes, the
verifier checks and a model is shown, read the same way by each."""

from __future__ import annotations

import re

from pmsearch.shared.mail_parts import Kind, split_mail
from pmsearch.shared.steering import without_steering
from pmsearch.shared.textcache import cached_text

# Greetings carry nothing a question asks about.
_GREETING = re.compile(
    r"^(?:dear|hi|hello|hallo|hey|good (?:morning|afternoon)|bonjour|salut|guten (?:morgen|tag))\b[^\n]{0,60},?\s*$",
    re.I | re.M,
)
# A name alone on the last line after a blank one ("\n\nTom"): a sign-off without the
# "Thanks" before it, which says no more than the sender does.
_NAME_LAST = re.compile(r"\n[ \t]*\n[ \t]*(?:[A-Z][\w.'-]*[ \t]*){1,3}\s*\Z")
_BLANKS = re.compile(r"\n\s*\n+")
_SPACES = re.compile(r"[ \t]+")


@cached_text(maxsize=1024)
def own_text(body: str) -> str:
    """The message's own words (:mod:`pmsearch.shared.mail_parts`): without what it quotes or
    forwards, its signature, patch and list footer, and any paragraph written to steer a
    model (:mod:`pmsearch.shared.steering`)."""
    return _tidy(split_mail(without_steering(body)).own)


def _tidy(own: str) -> str:
    own = _NAME_LAST.sub("", own.rstrip() + "\n")
    own = _GREETING.sub("", own)
    return _BLANKS.sub("\n", _SPACES.sub(" ", own)).strip()


_QUOTE_MARKS = re.compile(r"^[ \t]*(?:>[ \t]?)+", re.M)


@cached_text(maxsize=1024)
def own_replies(body: str) -> tuple[tuple[str, str, str], ...]:
    """The message's own words (as :func:`own_text` reads them) and what it quotes,
    stretch by stretch in order: ``(kind, text, author)`` with kind "own" or "quoted",
    quote marks taken off, the quoted author where the attribution names one. An inline
    reply answers what it quotes ("> Did the v2 make both changes?" / "Yes."), its own
    words alone often name nothing the question asks, and a quote is the only copy of
    a message the mailbox does not hold."""
    out: list[tuple[str, str, str]] = []
    for part in split_mail(without_steering(body)).parts:
        if part.kind is Kind.QUOTED:
            text = _BLANKS.sub("\n", _SPACES.sub(" ", _QUOTE_MARKS.sub("", part.text))).strip()
        elif part.kind is Kind.OWN:
            text = _tidy(part.text)
        else:
            continue
        if text:
            out.append((part.kind.value, text, part.author))
    return tuple(out)


# Quote marks and brackets in a display name ('jean-séverin LAIR-Telem"@c') would end the
# quote of a statement naming its sender, or read as a citation marker.
_NAME_MARKS = re.compile(r'["“”„\[\]]')


def sender_name(sender: str) -> str:
    """"Sabine Roth <sabine.roth@…>" as "Sabine Roth": the address costs tokens and the
    body gives it where a question needs it."""
    name = _NAME_MARKS.sub("", sender.split("<", 1)[0]).strip()
    return name or sender
