"""No answer lost to a restart or an outage: a run the planner handed on before its
deadline gets the answer its model wrote, however late the answerer or the verifier
reads it, and the watchdog waits for that draft instead of ending the run.

redis-server with the shipped ACL file; the answerer and the verifier are their real
workers, each connected as its own Redis user; the watchdog rounds run as the gateway
user. The planner's part (the run's record, its evidence, its snapshot and the answer
request) is written as the admin, as the planner and the searcher would have written it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from contextlib import AsyncExitStack

import pytest
from redis import asyncio as aioredis
from redis.exceptions import ResponseError

from pmsearch.services.answerer.worker import build_app as answerer_app
from pmsearch.services.gateway.watchdog import watchdog_round
from pmsearch.services.verifier.worker import build_app as verifier_app
from pmsearch.shared import streams
from pmsearch.shared.bus import publish
from pmsearch.shared.messages import AnswerRequested, DraftSentence, RunResult, RunSnapshot, Trace, Usage
from pmsearch.shared.runstore import RunStore
from pmsearch.shared.runstore.policy import EVIDENCE_KEEP_SECONDS, WORK_MARGIN_SECONDS
from pmsearch.shared.settings import AnswererSettings, VerifierSettings
from pmsearch.shared.worker import Policy
from tests.services.verifier.factory import M1, TENANT, evidence, run_record
from tests.services.verifier.factory import request as draft_request

POLICY = Policy(reclaim_idle_ms=400, heartbeat_ms=100, reclaim_poll_ms=50, block_ms=200)
QUESTION = "Did the insurer accept the Golf claim?"


def _client(stack, user: str) -> aioredis.Redis:
    return aioredis.from_url(stack.redis_url, username=user, password=stack.secrets.passwords[user])


@pytest.fixture
async def clients(acl_redis):
    made = {user: _client(acl_redis, user) for user in ("admin", "gateway", "answerer", "searcher")}
    yield made
    for client in made.values():
        await client.aclose()


async def handed_on_run(clients, *, deadline: float, handed_off: bool = True) -> AnswerRequested:
    """A run whose planner wrote its answer before ``deadline`` and handed it to the
    answerer (``handed_off``), as the planner and the searcher leave it in Redis."""
    admin = clients["admin"]
    run_id = f"late-{uuid.uuid4().hex[:12]}"
    meta = run_record(draft_request(run_id=run_id)).model_copy(update={"deadline": deadline, "created_at": deadline - 8})
    snapshot = RunSnapshot(handed_off_at=deadline - 1 if handed_off else None)
    await admin.set(streams.meta_key(run_id), meta.model_dump_json(), ex=3600)
    await admin.set(streams.snapshot_key(run_id), snapshot.model_dump_json(), ex=3600)
    await admin.zadd(streams.WATCHDOG, {run_id: deadline + 1.5})
    await RunStore(clients["searcher"]).add_evidence(run_id, 1, evidence(), deadline)
    return AnswerRequested(
        run_id=run_id, tenant_id=TENANT, scope_token=meta.scope_token, deadline=deadline, question=QUESTION,
        step=2, trace=Trace(), usage=Usage(), focus=[M1],
        proposed=[DraftSentence(text="The insurer accepted the claim.", citations=[M1])],
    )


async def answers_group(answerer: aioredis.Redis) -> None:
    """The answerers' group, as a first answerer would have made it."""
    with contextlib.suppress(ResponseError):  # BUSYGROUP: an earlier test made it
        await answerer.xgroup_create(streams.ANSWERS, streams.GROUP[streams.ANSWERS], id="$", mkstream=True)


async def watched(admin: aioredis.Redis, requests: list[AnswerRequested]) -> bool:
    return all([await admin.zscore(streams.WATCHDOG, r.run_id) is not None for r in requests])


def answerer_worker(stack, consumer: str):
    return answerer_app(
        AnswererSettings(redis_url=stack.redis_url, redis_username="answerer", redis_password=stack.secrets.passwords["answerer"],
                         model_base_url="http://127.0.0.1:9/v1"),
        consumer=consumer, policy=POLICY,
    )


def verifier_worker(stack, consumer: str):
    return verifier_app(
        VerifierSettings(redis_url=stack.redis_url, redis_username="verifier", redis_password=stack.secrets.passwords["verifier"]),
        consumer=consumer, policy=POLICY,
    )


async def started(exits: AsyncExitStack, *apps) -> None:
    for app in apps:
        await app.start()
        exits.push_async_callback(app.stop)


async def results(admin: aioredis.Redis, runs: list[str], timeout: float = 20.0) -> dict[str, RunResult]:
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        raw = [await admin.get(streams.final_key(r)) for r in runs]
        if all(raw):
            return {r: RunResult.model_validate_json(v) for r, v in zip(runs, raw, strict=True)}
        await asyncio.sleep(0.1)
    raise AssertionError("not every run got a result")


async def test_answers_queued_across_an_answerer_restart_are_all_answered(acl_redis, clients):
    admin, gateway, answerer = clients["admin"], clients["gateway"], clients["answerer"]
    deadline = time.time() + 1.0
    requests = [await handed_on_run(clients, deadline=deadline) for _ in range(4)]
    await answers_group(answerer)
    for req in requests:
        await publish(admin, streams.ANSWERS, req)
    # The old answerer read them and was killed before it handled any.
    await answerer.xreadgroup(streams.GROUP[streams.ANSWERS], "answerer-killed", {streams.ANSWERS: ">"})
    await asyncio.sleep(max(0.0, deadline + 1.6 - time.time()))

    await watchdog_round(gateway)
    assert await watched(admin, requests)  # each run's draft is on its way: none is ended

    async with AsyncExitStack() as exits:
        await started(exits, answerer_worker(acl_redis, "answerer-restarted"), verifier_worker(acl_redis, "verifier-1"))
        got = await results(admin, [r.run_id for r in requests])

    assert {r.outcome for r in got.values()} == {"answered"}
    assert all(r.answer.text == "The insurer accepted the claim." for r in got.values())


async def test_drafts_queued_through_a_verifier_outage_past_the_working_margin_are_answered(acl_redis, clients):
    admin, gateway = clients["admin"], clients["gateway"]
    deadline = time.time() + 1.0
    requests = [await handed_on_run(clients, deadline=deadline) for _ in range(3)]
    async with AsyncExitStack() as exits:
        await started(exits, answerer_worker(acl_redis, "answerer-1"))
        for req in requests:
            await publish(admin, streams.ANSWERS, req)
        await asyncio.sleep(max(0.0, deadline + 1.6 - time.time()))
        await watchdog_round(gateway)
    assert await watched(admin, requests)
    # The evidence outlives the working margin the verifier once had: an outage of
    # hours still finds it.
    for req in requests:
        assert await admin.ttl(streams.evidence_key(req.run_id)) > WORK_MARGIN_SECONDS + 3600

    async with AsyncExitStack() as exits:
        await started(exits, verifier_worker(acl_redis, "verifier-back"))
        got = await results(admin, [r.run_id for r in requests])

    assert {r.outcome for r in got.values()} == {"answered"}
    for req in requests:  # answered: the evidence need not be kept for hours any more
        assert await admin.ttl(streams.evidence_key(req.run_id)) <= WORK_MARGIN_SECONDS


async def test_a_dead_lettered_answer_request_still_ends_its_run(acl_redis, clients):
    admin = clients["admin"]
    answerer, group = clients["answerer"], streams.GROUP[streams.ANSWERS]
    req = await handed_on_run(clients, deadline=time.time() + 30)
    await answers_group(answerer)
    entry = await publish(admin, streams.ANSWERS, req)
    # Every delivery so far killed its answerer before it acknowledged the entry.
    await answerer.xreadgroup(group, "answerer-killed", {streams.ANSWERS: ">"})
    for _ in range(POLICY.max_deliveries - 1):
        await answerer.xclaim(streams.ANSWERS, group, "answerer-killed", 0, [entry])

    async with AsyncExitStack() as exits:
        await started(exits, answerer_worker(acl_redis, "answerer-next"), verifier_worker(acl_redis, "verifier-1"))
        got = await results(admin, [req.run_id])

    assert got[req.run_id].outcome == "degraded"
    assert await admin.xlen(streams.dead_letter(streams.ANSWERS)) >= 1


async def test_a_run_handed_on_is_looked_at_again_later_not_ended(clients):
    admin, gateway = clients["admin"], clients["gateway"]
    req = await handed_on_run(clients, deadline=time.time() - 5)
    now = time.time()

    assert await watchdog_round(gateway, now=now) == 0
    assert now + 30 < await admin.zscore(streams.WATCHDOG, req.run_id) <= now + 61


async def test_a_run_not_handed_on_is_ended_at_its_deadline(clients):
    admin, gateway = clients["admin"], clients["gateway"]
    req = await handed_on_run(clients, deadline=time.time() - 5, handed_off=False)

    await watchdog_round(gateway)

    assert await admin.zscore(streams.WATCHDOG, req.run_id) is None


async def test_a_draft_that_never_comes_is_given_up_once_its_evidence_keep_is_over(clients):
    admin, gateway = clients["admin"], clients["gateway"]
    req = await handed_on_run(clients, deadline=time.time() - 5)

    await watchdog_round(gateway, now=req.deadline + EVIDENCE_KEEP_SECONDS + 1)

    assert await admin.zscore(streams.WATCHDOG, req.run_id) is None
