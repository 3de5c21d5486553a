"""How long a run's keys live and how long its progress stream grows: one policy for
every writer (the key names are :mod:`pmsearch.shared.streams`').

* **Retained** for the run retention (``PM_RUN_RETENTION_DAYS``, default 30 days): what a
  finished run is inspected by (``GET /v1/runs/{id}``, its SSE replay, the admin list):
  the record (``meta``), the result with its trace and evidence summaries (``final``),
  the result's published mark (``owner:final``) and the run indexes.
* **Working** keys, until the run's deadline plus :data:`WORK_MARGIN_SECONDS`: the
  evidence (full message bodies), the planner's ``state`` and ``steps`` snapshot, the
  ``progress`` stream. The margin covers the watchdog's grace and the retries of a late
  ending; after it the result holds what readers need (a finished run's SSE replays from
  it), so memory holds bodies for minutes, not for the retention.
* **Evidence until verified**: a run's evidence lives until its deadline plus
  :data:`EVIDENCE_KEEP_SECONDS` (six hours), so a draft written before the deadline is
  verified against it however late the verifier reads it (a verifier down for hours);
  once the run's result is stored the verifier shortens it to the working margin.
* **Leases** (``lock``, ``watchdog``, the verifier's owner claim while it finishes) carry
  their own short PX, chosen by their holder.
"""

from __future__ import annotations

import math
import time

DAY_SECONDS = 86_400
DEFAULT_RETENTION_DAYS = 30.0
WORK_MARGIN_SECONDS = 600
WORK_MIN_SECONDS = 60  # a key written after its run's margin (a late retry) still lives this long
EVIDENCE_KEEP_SECONDS = 6 * 3600
# A run's progress stream: step and evidence events plus the ending; a cap far above a
# real run's few dozen entries, so only a runaway writer is trimmed.
PROGRESS_MAXLEN = 10_000


def retention_seconds(days: float = DEFAULT_RETENTION_DAYS) -> int:
    return max(1, math.ceil(days * DAY_SECONDS))


def evidence_ttl(deadline: float | None, now: float | None = None) -> int:
    """Seconds a run's evidence lives when written now, until its result is stored:
    until ``deadline`` plus :data:`EVIDENCE_KEEP_SECONDS`."""
    now = time.time() if now is None else now
    until = (now if deadline is None else deadline) + EVIDENCE_KEEP_SECONDS
    return max(WORK_MIN_SECONDS, math.ceil(until - now))


def work_ttl(deadline: float | None, now: float | None = None) -> int:
    """Seconds a run's working key lives when written now: until ``deadline`` plus the
    margin (from now, when the deadline is unknown), never under WORK_MIN_SECONDS."""
    now = time.time() if now is None else now
    until = (now if deadline is None else deadline) + WORK_MARGIN_SECONDS
    return max(WORK_MIN_SECONDS, math.ceil(until - now))
