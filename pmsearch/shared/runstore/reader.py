"""A run's keys read from a synchronous client: ``pmsearch verify``, the soak's audit
and the replay tools read stored runs the way the async :class:`RunStore` does."""

from __future__ import annotations

from collections.abc import Sequence

import redis

from pmsearch.shared import streams
from pmsearch.shared.messages import EvidenceMessage, ProgressEvent, RunResult
from pmsearch.shared.runstore import codec


class RunReader:
    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def evidence(self, run_id: str) -> dict[str, EvidenceMessage]:
        return codec.evidence(run_id, self.client.hgetall(streams.evidence_key(run_id)))

    def evidence_list(self, run_id: str, order: Sequence[str] = ()) -> list[EvidenceMessage]:
        return codec.ordered(self.evidence(run_id), order)

    def result(self, run_id: str) -> RunResult | None:
        return codec.record(run_id, "result", self.client.get(streams.final_key(run_id)), RunResult)

    def finished(self, run_id: str) -> bool:
        return bool(self.client.exists(streams.final_key(run_id)))

    def progress(self, run_id: str) -> list[ProgressEvent | None]:
        """Every entry of the run's progress stream; None for one that breaks its contract."""
        return [codec.progress(fields) for _, fields in self.client.xrange(streams.progress_key(run_id))]

    def run_ids(self) -> list[str]:
        """Every run whose record is still stored (a scan: for tools, not for requests)."""
        keys = self.client.scan_iter(match=streams.meta_key("*"), count=1000)
        return sorted(codec.text(k).split("{", 1)[1].split("}", 1)[0] for k in keys)
