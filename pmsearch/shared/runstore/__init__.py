"""A run's Redis keys (record, state, evidence, progress, snapshot, result, watchdog
entry, lock, indexes): the one place that reads and writes them, with one
serialisation, one TTL policy and one trimming policy. See :mod:`.store`."""

from pmsearch.shared.runstore.policy import (
    DEFAULT_RETENTION_DAYS,
    EVIDENCE_KEEP_SECONDS,
    PROGRESS_MAXLEN,
    WORK_MARGIN_SECONDS,
    WORK_MIN_SECONDS,
    retention_seconds,
    work_ttl,
)
from pmsearch.shared.runstore.reader import RunReader
from pmsearch.shared.runstore.store import INDEX_ALL, LOCK_MS, RunStore, index_key, owner_key

__all__ = [
    "DEFAULT_RETENTION_DAYS", "EVIDENCE_KEEP_SECONDS", "INDEX_ALL", "LOCK_MS", "PROGRESS_MAXLEN",
    "WORK_MARGIN_SECONDS", "WORK_MIN_SECONDS",
    "RunReader", "RunStore", "index_key", "owner_key", "retention_seconds", "work_ttl",
]
