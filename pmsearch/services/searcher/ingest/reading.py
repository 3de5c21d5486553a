"""One message's reading budget: the characters of text it may still take, the time
its extractors may still spend, and the notes on what was cut or refused. Every part of
a message, body and attachments, is read through it (``parser.py``)."""

from __future__ import annotations

import time

from pmsearch.services.searcher.ingest.documents import Unreadable
from pmsearch.services.searcher.ingest.limits import IngestLimits, PartTimeout, time_limit
from pmsearch.services.searcher.ingest.textutil import clean_text


class PartReader:
    """One message's budget (text characters, attachments, time for extraction) and the
    notes on what it cut."""

    def __init__(self, limits: IngestLimits) -> None:
        self.limits = limits
        self.room = limits.max_text_chars
        self.deadline = time.monotonic() + limits.parse_timeout_seconds
        self.notes: list[str] = []
        self.cut_in: str | None = None  # the part in which the text budget ran out
        self.unread = 0  # parts with text after that
        self.dropped = 0  # attachments over the count cap
        self.nesting = 0  # forwarded messages around the part being read

    def take(self, text: str, what: str, cut: bool = False) -> str:
        """``text`` as far as the budget allows; ``cut`` says the extractor left some out."""
        if self.room <= 0:
            if text or cut:
                if self.cut_in is None:  # the budget ended exactly where the last part did
                    self.cut_in = what
                else:
                    self.unread += 1
            return ""
        if len(text) > self.room:
            text, cut = text[: self.room], True
        self.room -= len(text)
        if cut and self.room <= 0:
            self.cut_in = what
        elif cut:
            self.notes.append(f"{what}: only part of its text was read")
        return text

    def plain(self, text: str, what: str) -> str:
        # Cleaning only shrinks text, so cutting well past the room still fills it.
        bound = 2 * self.room + 1024
        return self.take(clean_text(text[:bound], limit=None), what, len(text) > bound)

    def extract(self, fn, data: bytes | str, what: str) -> str:
        """Text from an extractor (PDF, HTML, an attached document: ``fn(data, room)``
        gives ``(text, cut)`` or ``(text, cut, notes)``), under the part's and the
        message's time; a file it refuses or cannot read loses its own text, noted."""
        if self.room <= 0:
            return self.take("", what, cut=True)
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.notes.append(f"{what}: not read, the message's {self.limits.parse_timeout_seconds:g} s were spent")
            return ""
        seconds = min(self.limits.extract_timeout_seconds, left)
        try:
            with time_limit(seconds):
                text, cut, *more = fn(data, self.room)
        except PartTimeout:
            self.notes.append(f"{what}: no text, extraction stopped after {seconds:g} s (PM_EXTRACT_TIMEOUT_SECONDS)")
            return ""
        except MemoryError:
            self.notes.append(f"{what}: no text, extraction ran out of memory (PM_INGEST_PARSE_MEMORY_MB)")
            return ""
        except Unreadable as exc:
            self.notes.append(f"{what}: {exc.reason}")
            return ""
        except Exception as exc:  # noqa: BLE001 - a reader's bug on a hostile file costs that file only
            self.notes.append(f"{what}: no text, its reader failed ({type(exc).__name__})")
            return ""
        self.notes.extend(f"{what}: {note}" for note in (more[0] if more else ()))
        return self.take(text or "", what, cut)

    def finish(self) -> list[str]:
        notes = list(self.notes)
        if self.cut_in:
            later = f"; {self.unread} later part(s) without text" if self.unread else ""
            notes.append(f"text over {self.limits.max_text_chars:,} characters (PM_INGEST_MAX_TEXT_CHARS): "
                         f"cut in {self.cut_in}{later}")
        if self.dropped:
            notes.append(f"{self.dropped} attachment(s) beyond the first {self.limits.max_attachments} left out "
                         "(PM_INGEST_MAX_ATTACHMENTS)")
        return notes
