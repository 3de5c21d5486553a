"""Stream and key names. Per-run keys carry a ``{run_id}`` hash tag so that all of a
run's keys land in one Redis Cluster slot."""

from __future__ import annotations

import zlib

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


# ------------------------------------------------------------ partitions
#
# With PM_STREAM_PARTITIONS=N (> 1) each stage's input stream is N keys, so that a Redis
# Cluster spreads a stage's queue over its primaries instead of holding it on one. A
# producer appends a message to one partition, chosen by its run (or request, or mail
# folder): a run's messages stay in one key, in order. Consumers read every partition
# (pmsearch/shared/worker.py). Dead letters and the retired drafts stream stay one key.
# The count is the deployment's, like the stream names: every process learns it from its
# settings when it connects (pmsearch/shared/bus.py), and a process that never connects
# through there (a test's own client) sees 1 unless told.

SLOTS = 16384  # Redis Cluster's hash slots
UNPARTITIONED = frozenset({LEGACY_DRAFTS})
_partitions = 1


def set_partitions(count: int) -> None:
    global _partitions
    if count < 1:
        raise ValueError("a stream has at least one partition")
    _partitions = count


def partition_count() -> int:
    return _partitions


def _slot(tag: str) -> int:
    from redis.crc import key_slot  # noqa: PLC0415 - only for the few tags below, once each

    return int(key_slot(tag.encode()))


def _tag(index: int, count: int) -> str:
    """A hash tag whose slot lies in the middle of the ``index``-th of ``count`` equal
    ranges of slots: a cluster whose primaries hold equal ranges in order (as
    ``redis-cli --cluster create`` makes them) puts each partition on its own primary."""
    width = SLOTS / count
    low, high = index * width + width / 4, (index + 1) * width - width / 4
    seq = 0
    while not low <= _slot(f"p{index}.{seq}") < high:
        seq += 1
    return f"p{index}.{seq}"


_TAGS: dict[int, tuple[str, ...]] = {}


def partitions(stream: str) -> tuple[str, ...]:
    """The keys ``stream``'s entries are in: itself, or ``<stream>:{p<i>.<n>}`` each (a
    partition's key is its own only partition)."""
    count = _partitions
    if count == 1 or stream in UNPARTITIONED or logical(stream) != stream:
        return (stream,)
    tags = _TAGS.get(count)
    if tags is None:
        tags = _TAGS[count] = tuple(_tag(i, count) for i in range(count))
    return tuple(f"{stream}:{{{tag}}}" for tag in tags)


def partition(stream: str, routing_key: str) -> str:
    """The key a message routed by ``routing_key`` is appended to (stable across
    processes: CRC-32, not Python's salted ``hash``)."""
    keys = partitions(stream)
    if len(keys) == 1:
        return keys[0]
    return keys[zlib.crc32(routing_key.encode()) % len(keys)]


def logical(key: str) -> str:
    """The stream a partition key belongs to (a stream's own name is its own)."""
    head, sep, tail = key.rpartition(":{p")
    return head if sep and tail.endswith("}") else key
