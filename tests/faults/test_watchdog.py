"""The deadline watchdog never loses a run and ends it once (issue 9, item 3), also when
a round fails half-way or a replica dies holding a run, and with two replicas.

redis-server with the shipped ACL file (``acl_redis``). A round that fails at one
command is a real failure, not a mock: it runs as a Redis user that is the gateway's
watchdog grants minus that one command, so Redis refuses it (NOPERM) where a dying
replica or a dropped connection would stop. Endings are then handed to the verifier's
own result store (as the verifier user), which counts what a run finally got.
"""

from __future__ import annotations

import asyncio
import secrets
import time
import uuid

import pytest
from redis import asyncio as aioredis

from pmsearch.services.gateway.watchdog import watchdog, watchdog_round
from pmsearch.services.verifier.decide import decide
from pmsearch.services.verifier.repository import Repository
from pmsearch.shared import streams
from pmsearch.shared.bus import DATA_FIELD, decode
from pmsearch.shared.messages import ProgressEvent, RunMeta, VerificationRequested

# The watchdog's commands, as the gateway user's grants in deploy/redis/users.acl.in.
WATCHDOG_GRANTS = {
    "set": "(~pm:watch:deadlines +zadd +zrangebyscore +zrem)",
    "claim": "(~pm:run:*:watchdog +set)",
    "meta": "(~pm:run:*:meta +get +exists)",
    "final": "(%R~pm:run:*:final +get +exists)",
    "publish": "(%W~pm:drafts:watchdog +xadd)",
    "snapshot": "(%R~pm:run:*:steps +get)",
}


def _client(stack, user: str, password: str | None = None) -> aioredis.Redis:
    return aioredis.from_url(stack.redis_url, username=user, password=password or stack.secrets.passwords[user])


@pytest.fixture
async def admin(acl_redis):
    client = _client(acl_redis, "admin")
    yield client
    await client.aclose()


@pytest.fixture
async def make_user(acl_redis, admin):
    """A watchdog user whose grants lack the named rules (or one command of them)."""
    made: list[aioredis.Redis] = []
    names: list[str] = []

    async def make(*, without_rule: str | None = None, without_command: str | None = None) -> aioredis.Redis:
        name, password = f"wd-{uuid.uuid4().hex[:8]}", secrets.token_urlsafe(16)
        rules = [
            (r.replace(f" +{without_command}", "") if without_command else r)
            for key, r in WATCHDOG_GRANTS.items() if key != without_rule
        ]
        await admin.execute_command("ACL", "SETUSER", name, "on", f">{password}", "resetchannels", "-@all", "+ping", *rules)
        names.append(name)
        client = _client(acl_redis, name, password)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()
    for name in names:
        await admin.execute_command("ACL", "DELUSER", name)


@pytest.fixture
async def verifier(acl_redis):
    client = _client(acl_redis, "verifier")
    yield client
    await client.aclose()


async def overdue_run(admin: aioredis.Redis) -> str:
    run_id = uuid.uuid4().hex
    now = time.time()
    meta = RunMeta(run_id=run_id, tenant_id="acme", principal="p", question="did they pay?",
                   scope_token="token", created_at=now - 10, deadline=now - 2, max_steps=4)
    await admin.set(streams.meta_key(run_id), meta.model_dump_json(), ex=600)
    await admin.zadd(streams.WATCHDOG, {run_id: now - 1})
    return run_id


def _ours(entries):
    """Entries in the envelope format: the session's Redis is shared with the ACL tests,
    which add bare entries to the same streams."""
    return [(entry_id, fields) for entry_id, fields in entries if DATA_FIELD.encode() in fields]


async def endings(admin: aioredis.Redis, run_id: str) -> list[tuple[str, VerificationRequested]]:
    found = []
    for entry_id, fields in _ours(await admin.xrange(streams.DRAFTS_FROM_WATCHDOG)):
        draft = decode(fields, VerificationRequested)
        if draft.run_id == run_id:
            found.append((entry_id.decode(), draft))
    return found


async def verify_all(verifier: aioredis.Redis, admin: aioredis.Redis, run_id: str) -> dict[str, int]:
    """Hand every ending of the run to the verifier's store; what the run got."""
    repo = Repository(verifier)
    for entry_id, draft in await endings(admin, run_id):
        await repo.finish(decide(draft, {}), entry_id)
    done = [decode(f, ProgressEvent) for _, f in _ours(await admin.xrange(streams.progress_key(run_id)))]
    return {
        "results": int(await admin.exists(streams.final_key(run_id))),
        "done": sum(e.event == "done" for e in done),
    }


async def one_loop_round(redis: aioredis.Redis, claim_seconds: float) -> None:
    """The running watchdog loop, for one round (it logs a failed round and carries on)."""
    stop = asyncio.Event()
    task = asyncio.create_task(watchdog(redis, stop, interval=0.05, claim_seconds=claim_seconds))
    await asyncio.sleep(0.2)
    stop.set()
    await task


async def still_watched(admin: aioredis.Redis, run_id: str) -> bool:
    return await admin.zscore(streams.WATCHDOG, run_id) is not None


async def test_a_round_that_fails_before_publishing_leaves_the_run_for_a_later_round(admin, make_user, verifier):
    run_id = await overdue_run(admin)
    cannot_publish = await make_user(without_rule="publish")
    healthy = await make_user()

    await one_loop_round(cannot_publish, claim_seconds=0.3)
    assert await endings(admin, run_id) == []
    assert await still_watched(admin, run_id)  # not lost: the backstop still holds it

    await asyncio.sleep(0.35)  # the failed replica's claim runs out
    await one_loop_round(healthy, claim_seconds=0.3)
    assert len(await endings(admin, run_id)) == 1
    assert not await still_watched(admin, run_id)
    assert await verify_all(verifier, admin, run_id) == {"results": 1, "done": 1}


async def test_a_round_that_fails_between_publish_and_remove_still_ends_the_run_once(admin, make_user, verifier):
    run_id = await overdue_run(admin)
    cannot_remove = await make_user(without_command="zrem")
    healthy = await make_user()

    await one_loop_round(cannot_remove, claim_seconds=0.3)
    assert len(await endings(admin, run_id)) == 1  # published first ...
    assert await still_watched(admin, run_id)  # ... and not removed

    await asyncio.sleep(0.35)
    await one_loop_round(healthy, claim_seconds=0.3)  # ends it again: harmless
    assert not await still_watched(admin, run_id)
    assert await verify_all(verifier, admin, run_id) == {"results": 1, "done": 1}


async def test_a_replica_that_died_holding_a_run_is_replaced_after_its_lease(admin, make_user, verifier):
    run_id = await overdue_run(admin)
    await admin.set(streams.watchdog_claim_key(run_id), "dead-replica", px=300)  # claimed, then died
    healthy = await make_user()

    assert await watchdog_round(healthy) == 0  # the lease is still held
    assert await still_watched(admin, run_id)
    await asyncio.sleep(0.35)
    assert await watchdog_round(healthy) == 1
    assert not await still_watched(admin, run_id)
    assert await verify_all(verifier, admin, run_id) == {"results": 1, "done": 1}


async def test_two_replicas_end_each_overdue_run_once(admin, make_user):
    runs = [await overdue_run(admin) for _ in range(20)]
    one, two = await make_user(), await make_user()
    for _ in range(3):
        await asyncio.gather(watchdog_round(one, replica="one"), watchdog_round(two, replica="two"))
    for run_id in runs:
        assert len(await endings(admin, run_id)) == 1
        assert not await still_watched(admin, run_id)


async def test_a_finished_run_leaves_the_set_without_an_ending(admin, make_user):
    run_id = await overdue_run(admin)
    await admin.set(streams.final_key(run_id), "{}", ex=60)
    assert await watchdog_round(await make_user()) == 0
    assert not await still_watched(admin, run_id)
    assert await endings(admin, run_id) == []
