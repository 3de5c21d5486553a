"""Clients of the gateway outlive a Redis restart (issue 9, item 1): an open event
stream and a synchronous wait carry on through it and end with the run's result,
instead of a stream cut off without ``done`` and a ``500``.

A real gateway process and a real redis-server with AOF and the shipped ACL file,
killed with SIGKILL and started again on the same port and data directory.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time

import httpx
import pytest
from httpx_sse import aconnect_sse
from redis import asyncio as aioredis

from pmsearch.cli.stack import Stack
from pmsearch.services.verifier.decide import decide
from pmsearch.services.verifier.repository import Repository
from pmsearch.shared import streams
from pmsearch.shared.messages import RunMeta, VerificationRequested
from tests.fixtures.stack import gateway_only, new_key


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    env = {"PM_DEFAULT_MAX_SECONDS": "30", "PM_MAX_STREAMS_PER_KEY": "8"}
    with gateway_only(tmp_path_factory.mktemp("redis-restart"), env) as stack:
        yield stack


@pytest.fixture(scope="module")
def api_key(gateway) -> str:
    return new_key(gateway)


def restart_redis(stack: Stack, down_seconds: float) -> None:
    os.killpg(stack.procs["redis"].pid, signal.SIGKILL)
    stack.procs["redis"].wait()
    time.sleep(down_seconds)
    stack.start_redis()  # same port, same directory: the AOF brings the data back


async def finish_as_the_verifier(stack: Stack, run_id: str) -> None:
    client = aioredis.from_url(stack.redis_url, username="verifier", password=stack.secrets.passwords["verifier"])
    try:
        meta = RunMeta.model_validate_json(await client.get(streams.meta_key(run_id)))
        draft = VerificationRequested(
            run_id=run_id, tenant_id=meta.tenant_id, scope_token=meta.scope_token, deadline=meta.deadline,
            question=meta.question, ending="budget_exhausted", reason="the time budget ran out",
        )
        assert await Repository(client).finish(decide(draft, {}), "1-0")
    finally:
        await client.aclose()


async def test_a_stream_and_a_wait_end_with_the_result_across_a_redis_restart(gateway, api_key):
    body = {"query": "did the insurer pay?", "mode": "agentic"}
    auth = {"Authorization": f"Bearer {api_key}"}
    async with httpx.AsyncClient(base_url=gateway.gateway_url, timeout=60) as client:
        waiting = asyncio.create_task(client.post("/v1/search", json=body, headers=auth))
        async with aconnect_sse(client, "POST", "/v1/search", json=body,
                                headers={**auth, "Accept": "text/event-stream"}) as source:
            assert source.response.status_code == 200
            streamed_run = source.response.headers["x-run-id"]
            await asyncio.sleep(1.5)  # the AOF is written every second
            await asyncio.to_thread(restart_redis, gateway, 1.0)

            await finish_as_the_verifier(gateway, streamed_run)
            events = []
            async with asyncio.timeout(10):
                async for event in source.aiter_sse():
                    events.append(event)
                    if event.event in ("done", "error"):
                        break
        assert events[-1].event == "done", [e.event for e in events]
        assert json.loads(events[-1].data)["outcome"] == "budget_exhausted"

        assert not waiting.done()  # still waiting, through the restart
        admin = aioredis.from_url(gateway.redis_url, username="admin", password=gateway.secrets.passwords["admin"])
        try:
            runs = {m.decode() for m in await admin.zrange(streams.WATCHDOG, 0, -1)} - {streamed_run}
        finally:
            await admin.aclose()
        (waited_run,) = runs
        await finish_as_the_verifier(gateway, waited_run)
        resp = await asyncio.wait_for(waiting, 10)
        assert resp.status_code == 200, resp.text
        assert resp.json()["outcome"] == "budget_exhausted"
        assert (await client.get("/healthz")).status_code == 200
