"""The gateway's readiness of its deadline watchdog (pmsearch/services/gateway/health.py)."""

from __future__ import annotations

import asyncio
import time

from pmsearch.services.gateway.health import WATCHDOG_STALE_SECONDS, WatchdogHealth


async def test_a_running_watchdog_with_recent_rounds_is_ready() -> None:
    task = asyncio.create_task(asyncio.sleep(60))
    try:
        health = WatchdogHealth(task=task)
        health.round_done()
        assert health.problem() is None
    finally:
        task.cancel()


async def test_a_watchdog_task_that_ended_is_not_ready() -> None:
    task = asyncio.create_task(asyncio.sleep(0))
    await task
    assert WatchdogHealth(task=task).problem() == "the watchdog task is not running"


async def test_a_watchdog_without_a_round_for_too_long_is_not_ready() -> None:
    task = asyncio.create_task(asyncio.sleep(60))
    try:
        health = WatchdogHealth(task=task, last_round=time.monotonic() - WATCHDOG_STALE_SECONDS - 1)
        assert health.problem().startswith("no watchdog round finished for")
    finally:
        task.cancel()
