"""How a message reads as its sender's own words: what the answerer attributes, the
verifier checks and a model is shown, read the same way by each."""

from __future__ import annotations

import re

from pmsearch.shared.mail_parts import split_mail
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
    body = split_mail(without_steering(body)).own
    body = _NAME_LAST.sub("", body.rstrip() + "\n")
    body = _GREETING.sub("", body)
    return _BLANKS.sub("\n", _SPACES.sub(" ", body)).strip()


# Quote marks and brackets in a display name ('jean-séverin LAIR-Telem"@c') would end the
# quote of a statement naming its sender, or read as a citation marker.
_NAME_MARKS = re.compile(r'["“”„\[\]]')


def sender_name(sender: str) -> str:
    """"Sabine Roth <sabine.roth@…>" as "Sabine Roth": the address costs tokens and the
    body gives it where a question needs it."""
    name = _NAME_MARKS.sub("", sender.split("<", 1)[0]).strip()
    return name or sender
