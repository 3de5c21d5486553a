"""A run's evidence as the searcher stored it (the hash only the searcher writes)."""

from __future__ import annotations

from collections.abc import Sequence

from redis.asyncio import Redis

from shared import streams
from shared.messages import EvidenceMessage


async def read_evidence(redis: Redis, run_id: str, order: Sequence[str] = ()) -> list[EvidenceMessage]:
    """Every evidence message of the run: those named in ``order`` first, in that order,
    then the rest in the hash's order."""
    raw = await redis.hgetall(streams.evidence_key(run_id))
    found = {(k.decode() if isinstance(k, bytes) else k): EvidenceMessage.model_validate_json(v) for k, v in raw.items()}
    ordered = [found[m] for m in dict.fromkeys(order) if m in found]
    seen = set(order)
    return ordered + [m for k, m in found.items() if k not in seen]
