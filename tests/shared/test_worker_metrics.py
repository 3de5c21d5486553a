"""What the worker runtime (pmsearch/shared/worker.py) counts per input stream: every delivery's
end by result, and how long handlers ran. Against a real redis-server."""

from __future__ import annotations

import asyncio
import time

from pmsearch.shared.bus import publish
from pmsearch.shared.errors import ContractError
from pmsearch.shared.settings import ServiceSettings
from pmsearch.shared.worker import Delivery, Worker
from tests.shared.test_worker import FAST, Job, client, metric, pending, running, stream, wait_for  # noqa: F401


async def test_each_delivery_is_counted_by_how_it_ended_and_handlers_are_timed(redis_url, client, stream):
    async def handle(job: Job, delivery: Delivery) -> None:
        if job.n == 1:
            raise ContractError("not for this stage")
        if job.n == 2 and delivery.count == 1:
            raise RuntimeError("once")

    async with running(redis_url, stream, handle):
        await publish(client, stream, Job(n=0))
        await publish(client, stream, Job(n=1))
        await publish(client, stream, Job(n=2))  # fails once, then taken over and handled
        await publish(client, stream, Job(n=3, deadline=time.time() - 1))  # late: dropped unrun

        async def settled() -> bool:
            ok = metric("pm_worker_handled_total", stream=stream, result="ok")
            return await pending(client, stream) == 0 and ok == 2

        await wait_for(settled)
    assert metric("pm_worker_handled_total", stream=stream, result="ok") == 2
    assert metric("pm_worker_handled_total", stream=stream, result="dead_lettered") == 1
    assert metric("pm_worker_handled_total", stream=stream, result="failed") == 1
    assert metric("pm_worker_handled_total", stream=stream, result="dropped") == 1
    # Timed: the handler runs of n=0, n=1, and both of n=2; the late entry never ran.
    assert metric("pm_worker_handle_seconds_count", stream=stream) == 4


async def test_the_configured_reclaim_idle_time_is_reported_for_each_input_stream(redis_url, stream):
    # What the pending-idle alert compares against: the setting, not its default.
    settings = ServiceSettings(redis_url=redis_url, worker_reclaim_idle_seconds=7.5, worker_heartbeat_seconds=1)
    worker = Worker(settings)
    try:
        worker.subscribe(stream, Job, lambda job, delivery: asyncio.sleep(0), group="g")
    finally:
        await worker.redis.aclose()
    assert metric("pm_worker_reclaim_idle_seconds", stream=stream) == 7.5
