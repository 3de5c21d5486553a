"""A worker's operator port (pmsearch/shared/health.py) against a real redis-server: metrics,
liveness and readiness, over HTTP."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from pmsearch.cli.stack import free_port
from pmsearch.shared.health import Probes, start_server
from pmsearch.shared.settings import ServiceSettings
from pmsearch.shared.worker import Policy, Worker
from tests.shared.test_worker import FAST, GROUP, Job


@pytest.fixture
async def served(redis_url: str):
    """A started worker on its own stream, its operator port, and a probe it may fail."""
    worker = Worker(ServiceSettings(redis_url=redis_url), consumer="c1", policy=FAST)

    async def handle(job: Job, delivery) -> None:
        return None

    worker.subscribe(f"pm:test:{uuid.uuid4().hex[:10]}", Job, handle, group=GROUP)
    broken: list[str] = []

    async def stage_check() -> None:
        if broken:
            raise RuntimeError(broken[0])

    worker.check_ready("stage", stage_check)
    await worker.start()
    port = free_port()
    server = start_server("127.0.0.1", port, Probes(worker, asyncio.get_running_loop()))
    try:
        yield worker, f"http://127.0.0.1:{port}", broken
    finally:
        server.shutdown()
        server.server_close()
        await worker.stop()


async def end_consuming(worker: Worker) -> None:
    """End the worker's consume loop, as a crash would (redis-py may swallow one
    cancellation that lands inside a command: cancel until it ends)."""
    task = worker._loops[0]
    for _ in range(100):
        task.cancel()
        await asyncio.sleep(0.02)
        if task.done():
            return
    raise AssertionError("the consume loop did not end")


async def get(url: str) -> httpx.Response:
    # From a thread: the server answers probes by running them on this event loop.
    return await asyncio.to_thread(httpx.get, url, timeout=10)


async def test_a_running_worker_is_live_and_ready(served) -> None:
    _, url, _ = served
    live, ready = await get(f"{url}/healthz"), await get(f"{url}/readyz")
    assert live.status_code == 200 and live.json() == {"status": "ok", "checks": {"consumers": "ok"}}
    assert ready.status_code == 200
    assert ready.json()["checks"] == {"consumers": "ok", "redis": "ok", "groups": "ok", "stage": "ok"}


async def test_a_failing_stage_check_makes_the_worker_unready_but_still_live(served) -> None:
    _, url, broken = served
    broken.append("the index is not open yet")
    ready = await get(f"{url}/readyz")
    assert ready.status_code == 503
    assert ready.json()["checks"]["stage"] == "RuntimeError: the index is not open yet"
    assert (await get(f"{url}/healthz")).status_code == 200


async def test_a_missing_consumer_group_makes_the_worker_unready(served, redis) -> None:
    worker, url, _ = served
    (stream, group), *_ = worker.groups.items()  # a stream, or its first partition
    await end_consuming(worker)  # first, or its reader creates the group again at once
    await redis.xgroup_destroy(stream, group)
    body = (await get(f"{url}/readyz")).json()
    assert body["status"] == "fail"
    assert body["checks"]["groups"] == f"RuntimeError: {stream} has no consumer group {group}"


async def test_a_stopped_consume_loop_fails_liveness(served) -> None:
    worker, url, _ = served
    await end_consuming(worker)
    live = await get(f"{url}/healthz")
    assert live.status_code == 503 and live.json()["checks"]["consumers"] != "ok"


async def test_a_blocked_event_loop_fails_liveness(redis_url: str) -> None:
    worker = Worker(ServiceSettings(redis_url=redis_url), consumer="c1", policy=Policy())
    loop = asyncio.new_event_loop()  # never run: as good as blocked
    try:
        probes = Probes(worker, loop, timeout=0.05)
        ok, body = await asyncio.to_thread(probes.evaluate, probes.live)
        # Unblock it once, so the abandoned probe is cancelled rather than left unawaited.
        await asyncio.to_thread(loop.run_until_complete, asyncio.sleep(0.01))
    finally:
        loop.close()
        await worker.redis.aclose()
    assert not ok and "event_loop" in body["checks"]


async def test_the_operator_port_serves_the_process_metrics(served) -> None:
    _, url, _ = served
    text = (await get(f"{url}/metrics")).text
    assert "pm_stream_lag" in text and "pm_worker_handled_total" in text
