"""Waiting for and streaming a run (services/gateway/runs.py), against a real Redis."""

from __future__ import annotations

import asyncio
import secrets
import time
import uuid

import pytest

from services.gateway.runs import RunService
from services.gateway.service import GatewayService
from shared.messages import RunMeta
from shared.runstore import RunStore
from shared.settings import GatewaySettings


class SwallowingStore(RunStore):
    """A store whose blocking read swallows the first cancellation that lands in it and
    returns as if it had timed out, as redis-py 8 can."""

    swallowed = 0

    async def read_progress(self, *args, **kwargs):
        try:
            return await super().read_progress(*args, **kwargs)
        except asyncio.CancelledError:
            if self.swallowed:
                raise
            self.swallowed += 1
            return []


def service(redis) -> RunService:
    settings = GatewaySettings(admin_token="a" * 32, scope_key=secrets.token_urlsafe(32))
    runs = RunService(GatewayService(redis, settings))
    runs.store = SwallowingStore(redis)
    return runs


def unfinished_run() -> RunMeta:
    now = time.time()
    return RunMeta(
        run_id=uuid.uuid4().hex, tenant_id="acme", principal="alice", question="when?", scope_token="tok",
        created_at=now, deadline=now + 60, max_steps=4, key_id="k1", mailboxes=["alice"],
    )


async def _consume(events) -> None:
    async for _ in events:
        pass


@pytest.mark.parametrize("how", ["wait", "events"])
async def test_a_wait_ends_when_cancelled_even_if_redis_py_swallows_the_cancellation(redis, how) -> None:
    runs, meta = service(redis), unfinished_run()
    task = asyncio.create_task(runs.wait(meta) if how == "wait" else _consume(runs.events(meta, None)))
    await asyncio.sleep(0.3)  # inside a blocking read
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=3)
    if not done:  # the bug: the loop went on towards the run's deadline; stop it for good
        task.cancel()
        await asyncio.wait({task}, timeout=3)
    assert runs.store.swallowed == 1
    assert task in done and task.cancelled()
