"""The result store against a real redis-server: exactly one result per run."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
import redis.asyncio as aioredis

from pmsearch.services.verifier.decide import decide
from pmsearch.services.verifier.errors import StoreError
from pmsearch.services.verifier.repository import Repository, owner_key
from pmsearch.shared.bus import connect, decode
from pmsearch.shared.messages import ProgressEvent, RunResult
from pmsearch.shared.runstore import WORK_MARGIN_SECONDS, retention_seconds
from pmsearch.shared.settings import ServiceSettings
from pmsearch.shared.streams import evidence_key, final_key, progress_key
from tests.services.verifier.factory import M1, evidence, request

RESULT_TTL_SECONDS = retention_seconds()  # the default run retention


def new_client(redis_url: str):
    """A client of its own, as a verifier replica has (a cluster client with ``--redis-cluster``)."""
    return connect(ServiceSettings(redis_url=redis_url))


@pytest.fixture
async def client(redis_url: str):
    c = new_client(redis_url)
    yield c
    await c.aclose()


def run_id() -> str:
    return f"run-{uuid.uuid4().hex[:12]}"


async def store_evidence(client: aioredis.Redis, run: str) -> None:
    await client.hset(
        evidence_key(run), mapping={k: v.model_dump_json() for k, v in evidence().items()}
    )


async def finished_for(client: aioredis.Redis, run: str) -> list[RunResult]:
    """The stored result once per ``done`` event published for the run."""
    raw = await client.get(final_key(run))
    dones = [e for e in await progress_events(client, run) if e.event == "done"]
    return [RunResult.model_validate_json(raw) for _ in dones] if raw else []


async def progress_events(client: aioredis.Redis, run: str) -> list[ProgressEvent]:
    return [decode(fields, ProgressEvent) for _, fields in await client.xrange(progress_key(run))]


async def test_load_evidence_reads_the_hash_and_skips_corrupt_entries(client) -> None:
    run = run_id()
    await store_evidence(client, run)
    await client.hset(evidence_key(run), "mbroken000000", b"{not json")
    loaded = await Repository(client).load_evidence(run)
    assert loaded == evidence()


async def test_first_writer_publishes_once(client) -> None:
    run = run_id()
    repo = Repository(client)
    answered = decide(request(run_id=run, text=f"The claim was accepted [{M1}]."), evidence())
    assert answered.outcome == "answered"

    assert await repo.finish(answered, "1-0") is True
    assert await repo.finish(answered, "1-0") is False  # redelivered after publishing
    other = decide(request(run_id=run, ending="budget_exhausted"), evidence())
    assert await repo.finish(other, "2-0") is False  # another draft of the same run

    assert (await repo.stored_result(run)) == answered
    assert 0 < await client.ttl(final_key(run)) <= RESULT_TTL_SECONDS
    assert await finished_for(client, run) == [answered]
    events = await progress_events(client, run)
    assert [e.event for e in events] == ["answer", "done"]
    assert events[1].payload == {"outcome": "answered"}
    assert events[0].payload["answer"]["text"] == "The claim was accepted."
    assert 0 < await client.ttl(progress_key(run)) <= RESULT_TTL_SECONDS


async def test_result_is_retained_and_progress_lives_until_the_deadline_margin(client) -> None:
    run = run_id()
    deadline = time.time() + 30
    result = decide(request(run_id=run, ending="degraded"), {})
    assert await Repository(client).finish(result, "1-0", deadline=deadline)
    for key in (final_key(run), owner_key(run)):
        assert RESULT_TTL_SECONDS - 5 <= await client.ttl(key) <= RESULT_TTL_SECONDS
    assert 30 + WORK_MARGIN_SECONDS - 5 <= await client.ttl(progress_key(run)) <= 31 + WORK_MARGIN_SECONDS


async def test_unanswered_result_has_no_answer_event(client) -> None:
    run = run_id()
    result = decide(request(run_id=run, ending="degraded"), evidence())
    assert await Repository(client).finish(result, "1-0")
    assert [e.event for e in await progress_events(client, run)] == ["done"]


async def test_progress_ttl_set_by_others_is_kept(client) -> None:
    run = run_id()
    await client.xadd(progress_key(run), {"x": "1"})
    await client.expire(progress_key(run), 100)
    await Repository(client).finish(decide(request(run_id=run, ending="degraded"), {}), "1-0")
    assert await client.ttl(progress_key(run)) <= 100


async def test_concurrent_finishes_store_and_publish_exactly_one(redis_url: str, client) -> None:
    run = run_id()
    clients = [new_client(redis_url) for _ in range(8)]
    try:
        results = [
            decide(request(run_id=run, text=f"The claim was accepted [{M1}]."), evidence()),
            decide(request(run_id=run, ending="budget_exhausted"), evidence()),
        ] * 4
        won = await asyncio.gather(
            *(Repository(c).finish(r, f"{i + 1}-0") for i, (c, r) in enumerate(zip(clients, results)))
        )
    finally:
        for c in clients:
            await c.aclose()
    assert sorted(won) == [False] * 7 + [True]
    winner = results[won.index(True)]
    assert await Repository(client).stored_result(run) == winner
    assert await finished_for(client, run) == [winner]
    assert [e.event for e in await progress_events(client, run)].count("done") == 1


async def test_two_drafts_race_through_the_service_functions(redis_url: str, client) -> None:
    async def handle(req, token):
        c = new_client(redis_url)
        try:
            repo = Repository(c)
            return await repo.finish(decide(req, await repo.load_evidence(req.run_id)), token)
        finally:
            await c.aclose()

    for _ in range(3):  # both orders of arrival are likely over a few rounds
        run = run_id()
        await store_evidence(client, run)
        drafts = [
            request(run_id=run, text=f"The claim was accepted [{M1}]."),
            request(run_id=run, ending="budget_exhausted"),
        ]
        won = await asyncio.gather(handle(drafts[0], "1-0"), handle(drafts[1], "2-0"))
        assert sorted(won) == [False, True]
        assert await client.exists(final_key(run)) == 1
        assert len(await finished_for(client, run)) == 1


async def test_redelivered_owner_finishes_an_interrupted_publication(client) -> None:
    run = run_id()
    repo = Repository(client)
    stored = decide(request(run_id=run, ending="budget_exhausted"), evidence(), now=1.0)
    # The owner died after claiming and storing, before publishing.
    await client.set(owner_key(run), "7-0", ex=60)
    await client.set(final_key(run), stored.model_dump_json(), ex=60)

    later = decide(request(run_id=run, ending="budget_exhausted"), evidence(), now=2.0)
    assert await repo.finish(later, "8-0") is False  # not the owner
    assert await repo.finish(later, "7-0") is True  # the owner's redelivery
    assert await finished_for(client, run) == [stored]
    assert await repo.finish(later, "7-0") is False


async def test_redelivered_owner_stores_a_result_it_never_wrote(client) -> None:
    run = run_id()
    await client.set(owner_key(run), "7-0", ex=60)  # died right after claiming
    result = decide(request(run_id=run, ending="degraded"), evidence())
    assert await Repository(client).finish(result, "7-0") is True
    assert await Repository(client).stored_result(run) == result


async def test_store_errors_are_verifier_errors() -> None:
    dead = aioredis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.2)
    with pytest.raises(StoreError):
        await Repository(dead).load_evidence("r")
    with pytest.raises(StoreError):
        await Repository(dead).finish(decide(request(ending="degraded"), {}), "1-0")
    await dead.aclose()


async def test_a_result_its_dead_writer_never_published_is_published_by_the_next_draft(client) -> None:
    run = run_id()
    stored = decide(request(run_id=run, ending="degraded"), evidence())
    # Stored, then the writer died before publishing and its lease ran out.
    await client.set(final_key(run), stored.model_dump_json(), ex=60)
    repo = Repository(client)
    later = decide(request(run_id=run, ending="budget_exhausted"), evidence())
    assert await repo.finish(later, "3-0") is True
    assert await finished_for(client, run) == [stored]  # what was stored
    assert await repo.finish(later, "3-0") is False
    assert await repo.finish(later, "4-0") is False
    assert len(await finished_for(client, run)) == 1


# ------------------------------------------------------------ the owner lease (issue 9, item 10)


async def test_a_dead_owner_blocks_the_run_only_for_its_lease(client) -> None:
    """The owning draft claimed and then died or was dead-lettered: the watchdog's
    draft is not acked as lost (the run would never end); it stays pending, and once
    the lease runs out it finishes the run."""
    run = run_id()
    repo = Repository(client, lease_seconds=0.3, busy_wait_seconds=0.05)
    await client.set(owner_key(run), "7-0", nx=True, px=repo.lease_ms)  # claimed, then died
    ending = decide(request(run_id=run, ending="budget_exhausted"), evidence())
    with pytest.raises(StoreError) as info:
        await repo.finish(ending, "9-0")
    assert info.value.code == "run_busy"  # retried, not lost
    await asyncio.sleep(0.35)
    assert await repo.finish(ending, "9-0") is True
    assert await repo.stored_result(run) == ending
    assert await finished_for(client, run) == [ending]


async def test_a_draft_that_fails_while_finishing_holds_the_run_only_for_its_lease(client) -> None:
    run = run_id()
    await client.hset(final_key(run), "x", "1")  # a key Redis refuses to GET: WRONGTYPE
    repo = Repository(client, lease_seconds=2)
    with pytest.raises(StoreError):
        await repo.finish(decide(request(run_id=run, ending="degraded"), evidence()), "7-0")
    assert 0 < await client.pttl(owner_key(run)) <= 2000  # not the run's 24 h


async def test_a_draft_waits_out_another_drafts_short_finishing_step(client) -> None:
    run = run_id()
    repo = Repository(client, lease_seconds=5, busy_wait_seconds=2)
    await client.set(owner_key(run), "7-0", nx=True, px=300)  # another draft, finishing
    ending = decide(request(run_id=run, ending="budget_exhausted"), evidence())
    assert await repo.finish(ending, "9-0") is True  # waited for the lease, then finished
    assert await repo.finish(ending, "9-0") is False
