"""How much of one message ingest is willing to read, extract and index.

Mail is hostile input: one message must not be able to stall the searcher or flood the
embedder. A message that cannot be parsed within bounds (size, parse time, memory) is
refused with a reason; one that can but is too big to index whole keeps its beginning
(attachments, text, chunks), with a note saying what was cut. One part that cannot be
extracted in time loses only its own text. Set from ``PM_INGEST_*`` and
``PM_EXTRACT_TIMEOUT_SECONDS`` (pmsearch/shared/settings.py); docs/design.md ("Limits on hostile
input") lists them.
"""

from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

MB = 1024 * 1024


@dataclass(frozen=True)
class IngestLimits:
    # Refused: a message this large is not parsed at all.
    max_message_bytes: int = 25 * MB
    # Truncated: attachments beyond this many are left out (noted).
    max_attachments: int = 50
    # Truncated: body and attachment text together, in characters (noted).
    max_text_chars: int = 2_000_000
    # Truncated: points indexed (embedded) per message, body first, then attachments in
    # order; a part whose first chunk is past the cap is not indexed at all (noted).
    max_chunks: int = 200
    # Per PDF or HTML part; a part over it is imported without text (noted).
    extract_timeout_seconds: float = 10.0
    # The whole message, in the parsing subprocess; over it the message is refused.
    parse_timeout_seconds: float = 30.0
    # Address space of the parsing subprocess, in MiB. A PDF or HTML part that runs out
    # loses its text (noted); the message is refused when parsing itself does.
    parse_memory_mb: int = 1024
    # Corrected: a Date header further in the future than this is taken as the time of
    # import (noted). A forged date years ahead would keep a message its thread's latest.
    max_date_skew_seconds: float = 86_400.0


def megabytes(n: int) -> str:
    """``26214400`` -> ``25.0 MB`` (MiB, as the defaults are written)."""
    return f"{n / MB:.1f} MB"


class PartTimeout(BaseException):
    """A part's extraction ran out of time. A BaseException, so that the extractors'
    ``except Exception`` (meant for broken files) cannot swallow it."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block after ``seconds`` with :class:`PartTimeout`; nests (an inner
    limit never outlives an outer one, and the outer one resumes after it).

    A timer signal can only interrupt the main thread, so elsewhere (a thread pool in
    tests) the block runs unbounded: the subprocess's own wall-clock and CPU limits are
    what bound it in the searcher."""
    if threading.current_thread() is not threading.main_thread() or seconds <= 0:
        yield
        return

    def _expire(signum, frame):
        raise PartTimeout()

    outer, _ = signal.getitimer(signal.ITIMER_REAL)
    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, _expire)
    signal.setitimer(signal.ITIMER_REAL, min(seconds, outer) if outer else seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 0.001))
