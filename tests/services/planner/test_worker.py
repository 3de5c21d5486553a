"""The planner's worker built by its factory against the test's own Redis: a run starts
with its first search; a run past its deadline or already finished is dropped unread."""

from __future__ import annotations

import asyncio
import time
import uuid

from pmsearch.services.planner.worker import build_app
from pmsearch.shared.bus import decode, publish
from pmsearch.shared.messages import RunRequested, ToolBatchRequested
from pmsearch.shared.settings import PlannerSettings
from pmsearch.shared.streams import RUNS, TOOLS, final_key
from pmsearch.shared.worker import Policy

POLICY = Policy(reclaim_idle_ms=400, heartbeat_ms=100, reclaim_poll_ms=50, block_ms=200)


def run_requested(*, deadline_in: float = 60) -> RunRequested:
    now = time.time()
    return RunRequested(
        run_id=f"run-{uuid.uuid4().hex[:10]}", tenant_id="acme", scope_token="token", deadline=now + deadline_in,
        question="Was the claim accepted?", max_steps=2, max_seconds=60, started_at=now,
    )


async def tool_batches(redis, run_id: str) -> list[ToolBatchRequested]:
    found = []
    for _, fields in await redis.xrange(TOOLS):
        try:
            found.append(decode(fields, ToolBatchRequested))
        except ValueError:
            pass  # other tests' malformed entries on the shared server
    return [b for b in found if b.run_id == run_id]


async def test_the_factory_builds_a_planner_on_the_given_redis(redis_url, redis):
    worker = build_app(PlannerSettings(redis_url=redis_url), consumer="t-planner", policy=POLICY)
    late, finished, live = run_requested(deadline_in=-1), run_requested(), run_requested()
    await redis.set(final_key(finished.run_id), "{}", ex=60)
    await worker.start()
    try:
        for req in (late, finished, live):
            await publish(redis, RUNS, req)
        for _ in range(200):
            if await tool_batches(redis, live.run_id):
                break
            await asyncio.sleep(0.05)
        (batch,) = await tool_batches(redis, live.run_id)
        assert batch.step == 0 and batch.calls[0].tool == "search"
        for _ in range(100):
            if (await redis.xpending(RUNS, "planner"))["pending"] == 0:
                break
            await asyncio.sleep(0.05)
        assert (await redis.xpending(RUNS, "planner"))["pending"] == 0
    finally:
        await worker.stop()
    assert await tool_batches(redis, late.run_id) == []
    assert await tool_batches(redis, finished.run_id) == []
