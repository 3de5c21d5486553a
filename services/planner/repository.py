"""The planner's view of a run's keys (through :class:`~shared.runstore.RunStore`): its
working state per run (under a short lock, since observations and the first plan for
one run can arrive at once), the snapshot other stages read, progress and evidence."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from redis.asyncio import Redis

from services.planner.errors import RunStateMissing
from services.planner.schemas import RunState
from shared.bus import publish
from shared.messages import EvidenceMessage, ProgressEvent, RunSnapshot
from shared.runstore import LOCK_MS, RunStore


class PlannerRepository:
    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self.store = RunStore(redis)

    async def create(self, state: RunState) -> bool:
        """Store a new run's state; False when it already exists (a redelivery)."""
        return await self.store.create_state(state.run.run_id, state, state.run.deadline)

    async def load(self, run_id: str) -> RunState:
        state = await self.store.state(run_id, RunState)
        if state is None:
            raise RunStateMissing(f"no planner state for run {run_id}")
        return state

    async def save(self, state: RunState) -> None:
        snapshot = RunSnapshot(trace=state.trace, usage=state.usage, hits=state.hits)
        await self.store.save_state(state.run.run_id, state, snapshot, state.run.deadline)

    @asynccontextmanager
    async def locked(self, run_id: str) -> AsyncIterator[None]:
        async with self.store.locked(run_id, LOCK_MS):
            yield

    async def finished(self, run_id: str) -> bool:
        return await self.store.finished(run_id)

    async def evidence(self, run_id: str, order: Sequence[str] = ()) -> list[EvidenceMessage]:
        return await self.store.evidence_list(run_id, order)

    async def progress(self, run_id: str, event: ProgressEvent, deadline: float) -> None:
        await self.store.add_progress(run_id, event, deadline)

    async def publish(self, stream: str, message) -> None:
        await publish(self.redis, stream, message)
