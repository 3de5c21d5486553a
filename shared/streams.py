"""Stream and key names. Per-run keys carry a ``{run_id}`` hash tag so that all of a
run's keys land in one Redis Cluster slot."""

from __future__ import annotations

import math
import time

RUNS = "pm:runs"
TOOLS = "pm:tools"
OBSERVATIONS = "pm:observations"
ANSWERS = "pm:answers"
DRAFTS = "pm:drafts"
QUERIES = "pm:queries"  # direct keyword / semantic / hybrid searches from the gateway
INGEST = "pm:ingest"  # raw RFC 822 from the admin API

# Consumer groups: one per stage; replicas of a stage share it.
GROUP = {
    RUNS: "planner",
    OBSERVATIONS: "planner",
    TOOLS: "searcher",
    QUERIES: "searcher",
    INGEST: "searcher",
    ANSWERS: "answerer",
    DRAFTS: "verifier",
}

STREAM_MAXLEN = 100_000  # a count cap on top of trimming by age (shared/worker.py)
REPLY_TTL_SECONDS = 120

# The TTL policy of a run's keys; every writer takes its TTL from here.
#
# * Retained for RESULT_TTL_SECONDS: what a finished run is read by (GET /v1/runs/{id},
#   its SSE replay, `pmsearch verify`): the record (``meta``), the result (``final``) and
#   the result's published mark (``owner:final``).
# * Working keys, until the run's deadline plus WORK_MARGIN_SECONDS: the evidence (full
#   message bodies), the planner's ``state`` and ``steps`` snapshot, the ``progress``
#   stream. The margin covers the watchdog's grace and the retries of a late ending; after
#   it the result holds what readers need (a finished run's SSE replays from it), and
#   memory holds bodies for minutes, not a day.
# * Leases (``lock``, ``watchdog``, the verifier's owner claim) carry their own short PX.
RESULT_TTL_SECONDS = 24 * 3600
WORK_MARGIN_SECONDS = 600
WORK_MIN_SECONDS = 60  # a key written after its run's margin (a late retry) still lives this long


def work_ttl(deadline: float | None, now: float | None = None) -> int:
    """Seconds a run's working key lives when written now: until ``deadline`` plus the
    margin (from now, when the deadline is unknown), never under WORK_MIN_SECONDS."""
    now = time.time() if now is None else now
    until = (now if deadline is None else deadline) + WORK_MARGIN_SECONDS
    return max(WORK_MIN_SECONDS, math.ceil(until - now))


def dead_letter(stream: str) -> str:
    return f"{stream}:dead"


def run_key(run_id: str, part: str) -> str:
    return f"pm:run:{{{run_id}}}:{part}"


def progress_key(run_id: str) -> str:
    return run_key(run_id, "progress")


def evidence_key(run_id: str) -> str:
    return run_key(run_id, "evidence")


def final_key(run_id: str) -> str:
    return run_key(run_id, "final")


def state_key(run_id: str) -> str:
    """The planner's own working state for a run."""
    return run_key(run_id, "state")


def lock_key(run_id: str) -> str:
    return run_key(run_id, "lock")


def snapshot_key(run_id: str) -> str:
    """The run's trace and usage so far (:class:`~shared.messages.RunSnapshot`)."""
    return run_key(run_id, "steps")


def meta_key(run_id: str) -> str:
    return run_key(run_id, "meta")


WATCHDOG = "pm:watch:deadlines"  # sorted set: run id by deadline + grace


def watchdog_claim_key(run_id: str) -> str:
    """The gateway replica ending an overdue run holds this lease (``SET NX PX``)."""
    return run_key(run_id, "watchdog")


def reply_key(request_id: str) -> str:
    """A list the searcher pushes one reply onto, for the gateway's direct calls."""
    return f"pm:reply:{request_id}"
