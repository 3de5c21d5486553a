"""Messages their senders corrected.

A newsletter resent "because the link in this morning's email was broken", a save-the-date
sent again "(corrected venue)": the first message still holds the broken link and the
wrong venue, word for word, so every other check passes a sentence that repeats them.
What tells is the later message: the same sender, within days, about the same thing (its
subject holds every word of the first one's), saying it corrects something. A sentence
that stands only on the corrected message, and says something its correction does not
(the old link, the old venue), is superseded.

Read from the mail's own words and headers, so an attacker can only make a message of
their own look corrected, which removes sentences and adds none; and where the receiving
MTA authenticated senders (``sender_auth``, pmsearch/services/searcher/ingest/authentication.py),
a correction's sender must be no less authenticated than the corrected message's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from email.utils import parseaddr

from pmsearch.shared.messages import EvidenceMessage
from pmsearch.shared.text.mail import own_text

# How a sender says a message of theirs was wrong: in the correction's subject ("(corrected
# venue)"), or in its own text, where an error word must be said of an earlier message
# ("my earlier message named the wrong venue"): a follow-up that reports "broken tiles"
# or "what went wrong" corrects nothing of its own.
_SUBJECT_CORRECTS = re.compile(r"\b(?:corrected|correction|revised|resent|resend)\b", re.I)
_TEXT_CORRECTS = re.compile(r"\b(?:resending|re-sending|please (?:ignore|disregard))\b", re.I)
_ERROR = re.compile(r"\b(?:corrected|correction|wrong|incorrect|broken|mistake|erroneous|error)\b", re.I)
_EARLIER = re.compile(
    r"\b(?:earlier|previous|last|first|original|this morning's|yesterday's|my|our)\s+(?:\w+\s+)?"
    r"(?:message|e-?mail|mail|invoice|letter|note|link|version)\b",
    re.I,
)
_SENTENCE = re.compile(r"[^.!?\n]+")
_REPLY_PREFIX = re.compile(r"^(?:\s*(?:re|fwd?|aw|wg)\s*:\s*)+", re.I)
_WORD = re.compile(r"\w+")
# A correction follows the mistake within days, or it corrects something else.
WITHIN = timedelta(days=7)


def corrected_by(evidence: Mapping[str, EvidenceMessage]) -> dict[str, str]:
    """Each evidence message a later one corrects, mapped to the latest correction's id."""
    out: dict[str, str] = {}
    dated = sorted(((_aware(m.date), m) for m in evidence.values() if m.date is not None), key=lambda pair: pair[0])
    for i, (first_date, first) in enumerate(dated):
        for later_date, later in dated[i + 1 :]:
            if first_date < later_date <= first_date + WITHIN and _corrects(later, first):
                out[first.message_id] = later.message_id
    return out


def _aware(moment: datetime) -> datetime:
    # A date without a zone is read as UTC, so that every date compares with every other.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _corrects(later: EvidenceMessage, first: EvidenceMessage) -> bool:
    if _address(later.sender) != _address(first.sender) or not _address(first.sender):
        return False
    if not _as_authenticated(later, first):
        return False
    words, later_words = _subject_words(first.subject), _subject_words(later.subject)
    if not words or not words <= later_words:
        return False
    # The subject's own marker, not one a reply inherits: "Re: ... (corrected venue)"
    # answers the correction, it corrects nothing.
    if any(_SUBJECT_CORRECTS.fullmatch(word) for word in later_words - words):
        return True
    text = own_text(later.body)
    return bool(_TEXT_CORRECTS.search(text)) or any(
        _ERROR.search(s.group()) and _EARLIER.search(s.group()) for s in _SENTENCE.finditer(text)
    )


def _as_authenticated(later: EvidenceMessage, first: EvidenceMessage) -> bool:
    """Whether ``later``'s sender is no less authenticated than ``first``'s: a From
    address is easy to forge, so a message whose sender failed authentication corrects
    nothing, and one the trusted MTA did not authenticate does not correct one it did."""
    return later.sender_auth != "fail" and (first.sender_auth != "pass" or later.sender_auth == "pass")


def _address(sender: str) -> str:
    return parseaddr(sender)[1].casefold()


def _subject_words(subject: str) -> frozenset[str]:
    return frozenset(_WORD.findall(_REPLY_PREFIX.sub("", subject).casefold()))
