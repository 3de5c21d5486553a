"""Filters the question never asked for.

A small model fills optional fields because they are there: a sender
``your_email@example.com``, an April 2023 date range. Such a filter quietly empties the
search, and the run spends a step learning nothing. A filter survives only when the
question gives a reason for it; the rest are dropped, and the note says so.
"""

from __future__ import annotations

import re
from typing import Any

from pmsearch.shared.text import calendar

_WORD = re.compile(r"[a-z0-9]{3,}")
_DATEISH = re.compile(
    r"\b(19|20)\d\d\b|\b\d{1,2}[./-]\d{1,2}\b"
    rf"|\b({'|'.join(calendar.month_numbers('en'))})\b"
    rf"|\b(today|yesterday|week|month|year|quarter|since|until|{'|'.join(calendar.WEEKDAY_NAMES['en'])})\b",
    re.I,
)
# Words of an address that say nothing about who sent it.
_GENERIC = frozenset("email mail your you our the com net org info example www noreply reply user name address".split())
_ATTACHMENT = re.compile(r"attach|pdf|file|document|csv|report|photo|scan", re.I)


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.casefold()))


def drop_unasked(question: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``arguments`` without the filters ``question`` gives no reason for, and their names."""
    q = question.casefold()
    q_words = _words(q)
    out = dict(arguments)
    dropped: list[str] = []

    senders = out.get("senders") or []
    if senders:
        kept = [s for s in senders if (_words(str(s)) - _GENERIC) & q_words]
        if len(kept) != len(senders):
            dropped.append("senders")
        out["senders"] = kept or None
    if (out.get("date_from") or out.get("date_to")) and not _DATEISH.search(q):
        out["date_from"] = out["date_to"] = None
        dropped.append("dates")
    folders = out.get("folders") or []
    if folders and not any(str(f).casefold() in q for f in folders):
        out["folders"] = None
        dropped.append("folders")
    mailboxes = out.get("mailboxes") or []
    if mailboxes and not any(str(m).casefold() in q for m in mailboxes):
        out["mailboxes"] = None
        dropped.append("mailboxes")
    if out.get("has_attachment") is not None and not _ATTACHMENT.search(q):
        out["has_attachment"] = None
        dropped.append("has_attachment")
    return {k: v for k, v in out.items() if v is not None}, dropped


def has_filters(arguments: dict[str, Any]) -> bool:
    filters = ("senders", "date_from", "date_to", "folders", "mailboxes", "has_attachment")
    return any(arguments.get(k) not in (None, [], "") for k in filters)
