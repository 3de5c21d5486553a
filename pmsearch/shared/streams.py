"""Stream and key names. Per-run keys carry a ``{run_id}`` hash tag so that all of a
run's keys land in one Redis Cluster slot."""

from __future__ import annotations

RUNS = "pm:runs"
TOOLS = "pm:tools"
OBSERVATIONS = "pm:observations"
ANSWERS = "pm:answers"
# Each producer of drafts writes a stream of its own, which no other may write: an ACL
# cannot see XADD's arguments, so on a shared stream one producer could jam the others
# (an entry ID at the maximum makes every later "XADD *" fail) or trim their entries
# away (MAXLEN 0). The worst a compromised producer does now is to its own drafts.
DRAFTS_FROM_PLANNER = "pm:drafts:planner"
DRAFTS_FROM_ANSWERER = "pm:drafts:answerer"
DRAFTS_FROM_WATCHDOG = "pm:drafts:watchdog"
DRAFT_STREAMS = (DRAFTS_FROM_PLANNER, DRAFTS_FROM_ANSWERER, DRAFTS_FROM_WATCHDOG)
# The one drafts stream of earlier releases: the verifier still drains what is left in
# it; nothing writes to it.
LEGACY_DRAFTS = "pm:drafts"
QUERIES = "pm:queries"  # direct keyword / semantic / hybrid searches from the gateway
INGEST = "pm:ingest"  # raw RFC 822 from the admin API, the IMAP sync and the LMTP listener
# Deliveries that ended on a mail server (a message expunged or moved out of a folder).
WITHDRAWN = "pm:withdrawn"
LOOKUPS = "pm:lookups"  # read-only tool calls outside a run (the MCP read_message tool)

# Consumer groups: one per stage; replicas of a stage share it.
GROUP = {
    RUNS: "planner",
    OBSERVATIONS: "planner",
    TOOLS: "searcher",
    QUERIES: "searcher",
    INGEST: "searcher",
    WITHDRAWN: "searcher",
    LOOKUPS: "searcher",
    ANSWERS: "answerer",
    **{stream: "verifier" for stream in (*DRAFT_STREAMS, LEGACY_DRAFTS)},
}

REPLY_TTL_SECONDS = 120

# A run's keys below are read and written only through pmsearch/shared/runstore (one
# serialisation, one TTL and trimming policy: pmsearch/shared/runstore/policy.py).


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
    """The run's trace and usage so far (:class:`pmsearch.shared.messages.RunSnapshot`)."""
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
