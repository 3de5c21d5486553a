"""The planner's Redis records: its working state per run (under a short lock, since
observations and the first plan for one run can arrive at once) and the run snapshot
other stages read."""

from __future__ import annotations

import asyncio
import secrets
from contextlib import asynccontextmanager
from typing import AsyncIterator

from redis.asyncio import Redis
from redis.exceptions import WatchError

from services.planner.errors import RunStateMissing
from services.planner.schemas import RunState
from shared import streams
from shared.bus import encode, publish
from shared.messages import ProgressEvent, RunSnapshot

LOCK_MS = 5_000


class PlannerRepository:
    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    async def create(self, state: RunState) -> bool:
        """Store a new run's state; False when it already exists (a redelivery)."""
        return bool(
            await self.redis.set(
                streams.state_key(state.run.run_id), state.model_dump_json(), nx=True,
                ex=streams.work_ttl(state.run.deadline),
            )
        )

    async def load(self, run_id: str) -> RunState:
        raw = await self.redis.get(streams.state_key(run_id))
        if raw is None:
            raise RunStateMissing(f"no planner state for run {run_id}")
        return RunState.model_validate_json(raw)

    async def save(self, state: RunState) -> None:
        run_id, ttl = state.run.run_id, streams.work_ttl(state.run.deadline)
        await self.redis.set(streams.state_key(run_id), state.model_dump_json(), ex=ttl)
        snapshot = RunSnapshot(trace=state.trace, usage=state.usage, hits=state.hits)
        await self.redis.set(streams.snapshot_key(run_id), snapshot.model_dump_json(), ex=ttl)

    @asynccontextmanager
    async def locked(self, run_id: str) -> AsyncIterator[None]:
        key, token = streams.lock_key(run_id), secrets.token_hex(8)
        while not await self.redis.set(key, token, nx=True, px=LOCK_MS):
            await asyncio.sleep(0.01)
        try:
            yield
        finally:
            await self._release(key, token)

    async def _release(self, key: str, token: str) -> None:
        """Delete the lock only if it is still ours (it may have expired and been taken).
        WATCH/MULTI rather than a script: the planner's Redis user may not run scripts."""
        async with self.redis.pipeline(transaction=True) as pipe:
            try:
                await pipe.watch(key)
                current = await pipe.get(key)
                if current in (token, token.encode()):
                    pipe.multi()
                    pipe.delete(key)
                    await pipe.execute()
            except WatchError:
                pass  # changed meanwhile: no longer ours

    async def finished(self, run_id: str) -> bool:
        return bool(await self.redis.exists(streams.final_key(run_id)))

    async def progress(self, run_id: str, event: ProgressEvent, deadline: float) -> None:
        await self.redis.xadd(streams.progress_key(run_id), encode(event), maxlen=10_000, approximate=True)
        await self.redis.expire(streams.progress_key(run_id), streams.work_ttl(deadline))

    async def publish(self, stream: str, message) -> None:
        await publish(self.redis, stream, message)
