"""The verifier does its whole job as the Redis user the shipped ACL file defines."""

from __future__ import annotations

import uuid

import pytest
import redis
import redis.asyncio as aioredis

from pmsearch.cli.acl import rules
from pmsearch.services.verifier.repository import Repository
from pmsearch.shared.bus import redis_kwargs
from pmsearch.shared.settings import VerifierSettings
from pmsearch.shared.streams import DRAFTS_FROM_ANSWERER as DRAFTS
from pmsearch.shared.streams import dead_letter, evidence_key, final_key
from tests.services.verifier.factory import M1, evidence, request
from tests.services.verifier.test_worker import finished_for, running, submit, wait_for

PASSWORD = "verifier-test-password"


@pytest.fixture(scope="module")
def verifier_settings(redis_url: str) -> VerifierSettings:
    admin = redis.Redis.from_url(redis_url)
    admin.execute_command("ACL", "SETUSER", "verifier", "reset", *rules("verifier", PASSWORD))
    admin.close()
    return VerifierSettings(redis_url=redis_url, redis_username="verifier", redis_password=PASSWORD)


async def test_repository_works_within_the_acl(redis_url, verifier_settings) -> None:
    run = f"run-{uuid.uuid4().hex[:8]}"
    admin = aioredis.from_url(redis_url)
    await admin.hset(evidence_key(run), mapping={k: v.model_dump_json() for k, v in evidence().items()})
    client = aioredis.from_url(verifier_settings.redis_url, **redis_kwargs(verifier_settings))
    try:
        repo = Repository(client)
        from pmsearch.services.verifier.decide import decide

        result = decide(request(run_id=run, text=f"The claim was accepted [{M1}]."), await repo.load_evidence(run))
        assert await repo.finish(result, "1-0") is True
        assert await repo.finish(result, "2-0") is False
        with pytest.raises(redis.exceptions.NoPermissionError):
            await client.hset(evidence_key(run), "m1", "forged")
    finally:
        await client.aclose()
        await admin.aclose()


async def test_worker_runs_as_the_verifier_user(redis_url, verifier_settings) -> None:
    run = f"run-{uuid.uuid4().hex[:8]}"
    admin = aioredis.from_url(redis_url)
    await admin.delete(DRAFTS, dead_letter(DRAFTS))
    await admin.hset(evidence_key(run), mapping={k: v.model_dump_json() for k, v in evidence().items()})
    try:
        async with running(verifier_settings.redis_url, "acl-w1", settings=verifier_settings):
            await submit(admin, request(run_id=run, text=f"The claim was accepted [{M1}]."))
            (event,) = await wait_for(lambda: finished_for(admin, run))
            assert event.outcome == "answered"
            await admin.xadd(DRAFTS, {"__data__": b"not json"})
            await wait_for(lambda: admin.xlen(dead_letter(DRAFTS)))
        assert await admin.exists(final_key(run)) == 1
    finally:
        await admin.aclose()
