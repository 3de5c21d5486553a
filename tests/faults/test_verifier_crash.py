"""A verifier that stops between storing a run's result and publishing it (issue 9,
item 10): the client gets the stored result (``done`` on SSE, 200 on GET) once the next
draft of the run publishes it, after the dead writer's lease runs out.

A real gateway process on redis-server with the shipped ACL file. The crash is real
as far as Redis is concerned: the verifier's store runs as a user that may write
``final`` but not the run's progress stream, so Redis refuses the publication
(NOPERM) right after the result is stored, where a killed verifier would stop.
"""

from __future__ import annotations

import asyncio
import json
import secrets

import httpx
import pytest
from httpx_sse import aconnect_sse
from redis import asyncio as aioredis

from pmsearch.services.verifier.decide import decide
from pmsearch.services.verifier.errors import StoreError
from pmsearch.services.verifier.repository import Repository
from pmsearch.shared import streams
from pmsearch.shared.bus import decode
from pmsearch.shared.messages import ProgressEvent, RunMeta, VerificationRequested
from tests.fixtures.stack import gateway_only, new_key

QUESTION = "did the insurer pay?"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    with gateway_only(tmp_path_factory.mktemp("verifier-crash"), {"PM_DEFAULT_MAX_SECONDS": "30"}) as stack:
        yield stack


@pytest.fixture(scope="module")
def api_key(gateway) -> str:
    return new_key(gateway)


@pytest.fixture
async def admin(gateway):
    client = aioredis.from_url(gateway.redis_url, username="admin", password=gateway.secrets.passwords["admin"])
    yield client
    await client.aclose()


@pytest.fixture
async def crashing_verifier(gateway, admin):
    """The verifier's result grants without its progress stream: publishing fails."""
    name, password = "verifier-crashing", secrets.token_urlsafe(16)
    await admin.execute_command(
        "ACL", "SETUSER", name, "reset", "on", f">{password}", "resetchannels", "-@all", "+ping",
        "(~pm:run:*:final +get +set +exists)",
    )
    client = aioredis.from_url(gateway.redis_url, username=name, password=password)
    yield client
    await client.aclose()
    await admin.execute_command("ACL", "DELUSER", name)


@pytest.fixture
async def verifier(gateway):
    client = aioredis.from_url(gateway.redis_url, username="verifier", password=gateway.secrets.passwords["verifier"])
    yield client
    await client.aclose()


async def ending_of(admin: aioredis.Redis, run_id: str) -> VerificationRequested:
    meta = RunMeta.model_validate_json(await admin.get(streams.meta_key(run_id)))
    return VerificationRequested(
        run_id=run_id, tenant_id=meta.tenant_id, scope_token=meta.scope_token, deadline=meta.deadline,
        question=meta.question, ending="budget_exhausted", reason="the time budget ran out",
    )


async def test_a_result_whose_verifier_died_before_publishing_it_reaches_the_client_when_the_next_draft_publishes_it(
    gateway, api_key, admin, crashing_verifier, verifier
):
    """Stored but not announced, a result is not shown (with Sentinel it may not be on a
    replica yet, and a failover would make the run again); the next draft of the run (a
    redelivery, the watchdog's) publishes the stored result, not its own, and the
    waiting stream ends with it."""
    auth = {"Authorization": f"Bearer {api_key}"}
    async with httpx.AsyncClient(base_url=gateway.gateway_url, timeout=30) as client:
        async with aconnect_sse(client, "POST", "/v1/search", json={"query": QUESTION, "mode": "agentic"},
                                headers={**auth, "Accept": "text/event-stream"}) as source:
            assert source.response.status_code == 200
            run_id = source.response.headers["x-run-id"]
            draft = await ending_of(admin, run_id)
            with pytest.raises(StoreError):
                await Repository(crashing_verifier, lease_seconds=0.3).finish(decide(draft, {}), "1-0")
            stored = await admin.get(streams.final_key(run_id))
            assert stored is not None  # stored ...
            progress = [decode(f, ProgressEvent) for _, f in await admin.xrange(streams.progress_key(run_id))]
            assert not any(e.event == "done" for e in progress)  # ... never announced

            resp = await client.get(f"/v1/runs/{run_id}", headers=auth)
            assert resp.status_code == 202 and resp.json()["status"] == "running"

            await asyncio.sleep(0.35)  # the dead writer's lease runs out
            assert await Repository(verifier).finish(decide(draft, {}, now=1.0), "2-0") is True
            events = []
            async with asyncio.timeout(5):  # well before the run's deadline
                async for event in source.aiter_sse():
                    events.append(event)
                    if event.event in ("done", "error"):
                        break
        assert events[-1].event == "done"
        assert json.loads(events[-1].data) == json.loads(stored)

        resp = await client.get(f"/v1/runs/{run_id}", headers=auth)
        assert resp.status_code == 200 and resp.json() == json.loads(stored)
    progress = [decode(f, ProgressEvent) for _, f in await admin.xrange(streams.progress_key(run_id))]
    assert [e.payload for e in progress if e.event == "done"] == [{"outcome": "budget_exhausted"}]
