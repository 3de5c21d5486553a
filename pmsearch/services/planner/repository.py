"""The planner's view of a run's keys (through :class:`pmsearch.shared.runstore.RunStore`): its
working state per run (held under a short lock, since observations and the first plan
for one run can arrive at once), the snapshot other stages read, progress and evidence."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from redis.asyncio import Redis

from pmsearch.services.planner.errors import RunStateMissing
from pmsearch.services.planner.schemas import RunState
from pmsearch.shared.bus import publish
from pmsearch.shared.messages import EvidenceMessage, ProgressEvent, RunSnapshot
from pmsearch.shared.runstore import LOCK_MS, RunStore
from pmsearch.shared.runstore.store import HeldState


class Held:
    """A run's state held under its lock (:meth:`PlannerRepository.holding`)."""

    def __init__(self, held: HeldState[RunState]) -> None:
        self._held = held

    @property
    def state(self) -> RunState:
        assert self._held.state is not None  # holding() refuses a run without one
        return self._held.state

    def save(self, state: RunState) -> None:
        snapshot = RunSnapshot(trace=state.trace, usage=state.usage, hits=state.hits, handed_off_at=state.handed_off_at)
        self._held.save(state, snapshot, state.run.deadline)


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

    @asynccontextmanager
    async def holding(self, run_id: str) -> AsyncIterator[Held]:
        """The run's state under its lock; what ``held.save`` is given is written, with
        the snapshot other stages read, as the lock is released."""
        async with self.store.held_state(run_id, RunState, LOCK_MS) as held:
            if held.state is None:
                raise RunStateMissing(f"no planner state for run {run_id}")
            yield Held(held)

    async def finished(self, run_id: str) -> bool:
        return await self.store.finished(run_id)

    async def evidence(self, run_id: str, order: Sequence[str] = ()) -> list[EvidenceMessage]:
        return await self.store.evidence_list(run_id, order)

    async def progress(self, run_id: str, event: ProgressEvent, deadline: float) -> None:
        await self.store.add_progress(run_id, event, deadline)

    async def publish(self, stream: str, message) -> None:
        await publish(self.redis, stream, message)
