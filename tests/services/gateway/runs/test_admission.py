"""A run's admission, one hash slot a step (``RunService._record_and_publish``,
``RunStore.admit``), against a real Redis: a gateway that dies between two steps leaves
nothing the watchdog does not settle, and a step Redis refuses leaves nothing at all."""

from __future__ import annotations

import asyncio
import secrets
import time
import uuid
from datetime import UTC, datetime

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError

from pmsearch.services.gateway.errors import IdempotencyKeyInUse
from pmsearch.services.gateway.repository import GatewayRepository
from pmsearch.services.gateway.runs import service as service_module
from pmsearch.services.gateway.runs.idempotency import Claim, request_digest
from pmsearch.services.gateway.runs.service import RunService
from pmsearch.services.gateway.schemas import ApiKeyRecord
from pmsearch.services.gateway.search.schemas import SearchRequest
from pmsearch.services.gateway.searcher import Searcher
from pmsearch.services.gateway.watchdog import watchdog_round
from pmsearch.shared import streams
from pmsearch.shared.bus import decode
from pmsearch.shared.messages import RunMeta, RunRequested, VerificationRequested
from pmsearch.shared.runstore import codec
from pmsearch.shared.runstore.store import INDEX_ALL, index_key
from pmsearch.shared.settings import GatewaySettings

# The steps in the order the gateway takes them; a gateway dying "before" one took the
# earlier ones only.
STEPS = ("watch_deadline", "record", "index", "mark_started", "publish")


class Died(Exception):
    """The gateway's process ending mid-admission: nothing after it runs, nothing is undone."""


def service(redis) -> RunService:
    settings = GatewaySettings(admin_token="a" * 32, scope_key=secrets.token_urlsafe(32))
    return RunService(Searcher(redis, settings), GatewayRepository(redis))


def run() -> tuple[RunMeta, RunRequested]:
    now, run_id = time.time(), uuid.uuid4().hex
    tenant = f"t-{run_id[:8]}"
    meta = RunMeta(
        run_id=run_id, tenant_id=tenant, principal="alice", question="when?", scope_token="tok",
        created_at=now, deadline=now + 60, max_steps=4, key_id="k1", mailboxes=["alice"],
    )
    requested = RunRequested(
        run_id=run_id, tenant_id=tenant, scope_token="tok", deadline=now + 60, question="when?",
        max_steps=4, max_seconds=60, started_at=now,
    )
    return meta, requested


async def published(redis, stream: str, model, run_id: str) -> int:
    entries = await redis.xrange(streams.partition(stream, run_id))
    return sum(1 for _, fields in entries if decode(fields, model).run_id == run_id)


async def admit_until(redis, monkeypatch, runs: RunService, died_before: str | None) -> RunMeta:
    """Admit a run whose gateway dies just before ``died_before`` (None: it lives)."""
    meta, requested = run()

    async def die(*args, **kwargs):
        raise Died

    marked = []

    async def mark_started() -> None:
        marked.append(meta.run_id)

    if died_before in ("watch_deadline", "record", "index"):
        monkeypatch.setattr(runs.store, died_before, die)
    if died_before == "publish":
        monkeypatch.setattr(service_module, "publish", die)
    before_publish = die if died_before == "mark_started" else mark_started
    if died_before is None:
        await runs._record_and_publish(meta, requested, before_publish)
    else:
        with pytest.raises(Died):
            await runs._record_and_publish(meta, requested, before_publish)
    return meta


@pytest.mark.parametrize("died_before", STEPS)
async def test_a_gateway_dying_between_two_steps_leaves_a_run_the_watchdog_settles(
    redis, monkeypatch, died_before
) -> None:
    runs = service(redis)
    meta = await admit_until(redis, monkeypatch, runs, died_before)
    recorded = STEPS.index(died_before) > STEPS.index("record")
    assert (await runs.store.meta(meta.run_id) is not None) is recorded  # a half-made run is not undone ...
    assert await published(redis, streams.RUNS, RunRequested, meta.run_id) == 0  # ... nor ever started

    overdue = meta.deadline + runs.settings.deadline_grace_seconds + 1
    for _ in range(2):
        await watchdog_round(redis, now=overdue, claim_seconds=0.001)
        await asyncio.sleep(0.01)  # past the round's claim on the run
    # Ended once if it was recorded (the verifier stores its budget_exhausted result);
    # its watchdog entry dropped either way: nothing is left open.
    endings = await published(redis, streams.DRAFTS_FROM_WATCHDOG, VerificationRequested, meta.run_id)
    assert endings == (1 if recorded else 0)
    assert await redis.zscore(streams.WATCHDOG, meta.run_id) is None


async def test_a_run_is_published_only_after_every_other_step(redis, monkeypatch) -> None:
    runs = service(redis)
    meta = await admit_until(redis, monkeypatch, runs, None)
    assert await published(redis, streams.RUNS, RunRequested, meta.run_id) == 1
    assert await runs.store.meta(meta.run_id) == meta
    assert await redis.zscore(streams.WATCHDOG, meta.run_id) is not None
    for index in (INDEX_ALL, index_key(meta.tenant_id)):
        assert await redis.zscore(index, meta.run_id) == pytest.approx(meta.created_at)


@pytest.mark.parametrize("refusal", [OutOfMemoryError("OOM command not allowed"), IdempotencyKeyInUse("taken", retry_after=1)])
async def test_a_refused_step_withdraws_what_the_earlier_ones_wrote(redis, refusal) -> None:
    runs = service(redis)
    meta, requested = run()

    async def refuse() -> None:
        raise refusal

    with pytest.raises(type(refusal)):
        await runs._record_and_publish(meta, requested, refuse)
    assert await runs.store.meta(meta.run_id) is None
    assert await redis.zscore(streams.WATCHDOG, meta.run_id) is None
    for index in (INDEX_ALL, index_key(meta.tenant_id)):
        assert await redis.zscore(index, meta.run_id) is None
    assert await published(redis, streams.RUNS, RunRequested, meta.run_id) == 0


async def test_every_admission_step_may_be_sent_again(redis) -> None:
    runs, (meta, _) = service(redis), run()
    await runs.store.admit(meta, watch_at=meta.deadline)
    await runs.store.admit(meta.model_copy(update={"question": "another"}), watch_at=meta.deadline + 99)
    assert await runs.store.meta(meta.run_id) == meta  # the first record is kept
    assert await redis.zscore(streams.WATCHDOG, meta.run_id) == pytest.approx(meta.deadline)
    assert await redis.zcard(index_key(meta.tenant_id)) == 1


def agentic_key() -> ApiKeyRecord:
    return ApiKeyRecord(
        key_id=uuid.uuid4().hex, tenant_id=f"t-{uuid.uuid4().hex[:8]}", principal="alice",
        permissions=["search:agentic"], mailboxes=["alice"], created_at=datetime.now(UTC),
    )


async def lose_the_started_mark(runs: RunService, key: ApiKeyRecord, request: SearchRequest) -> RunMeta:
    """A request whose run is recorded but whose started mark is lost with the primary
    that took it (a Sentinel failover): the gateway sees a broken connection."""
    marks = runs.requests.mark_started

    async def lost(*args) -> None:
        raise RedisConnectionError("Connection closed by server.")

    runs.requests.mark_started = lost
    with pytest.raises(RedisConnectionError):
        await runs.start(key, request, "order-7")
    runs.requests.mark_started = marks
    [run_id] = await runs.redis.zrange(index_key(key.tenant_id), 0, -1)
    return await runs.store.meta(codec.text(run_id))


async def test_a_run_recorded_but_never_marked_started_is_started_once_by_the_request_sent_again(
    redis, monkeypatch
) -> None:
    runs, key, request = service(redis), agentic_key(), SearchRequest(query="when?", mode="agentic")
    meta = await lose_the_started_mark(runs, key, request)
    assert await published(redis, streams.RUNS, RunRequested, meta.run_id) == 0
    with pytest.raises(IdempotencyKeyInUse):  # so soon, the admission may still be under way
        await runs.start(key, request, "order-7")
    monkeypatch.setattr(service_module, "RESUME_AFTER_SECONDS", 0.0)
    resumed, followed = await runs.start(key, request, "order-7")
    assert (resumed.run_id, followed) == (meta.run_id, True)
    again, _ = await runs.start(key, request, "order-7")
    assert again.run_id == meta.run_id
    assert await published(redis, streams.RUNS, RunRequested, meta.run_id) == 1  # started once, no second run
    assert await redis.zcard(index_key(key.tenant_id)) == 1


async def test_a_broken_connection_mid_admission_keeps_the_reservation(redis) -> None:
    """Whether the run started is unknown, so the key is not freed for a second run."""
    runs, key, request = service(redis), agentic_key(), SearchRequest(query="when?", mode="agentic")
    meta = await lose_the_started_mark(runs, key, request)
    claim = Claim(run_id="r" * 32, request=request_digest(request))
    assert (await runs.requests.reserve(key.key_id, "order-7", claim)).run_id == meta.run_id


async def test_a_slow_admission_whose_run_was_resumed_meanwhile_goes_on_and_withdraws_nothing(redis) -> None:
    runs, key, request = service(redis), agentic_key(), SearchRequest(query="when?", mode="agentic")
    claim = Claim(run_id=uuid.uuid4().hex, request=request_digest(request))
    await runs.requests.reserve(key.key_id, "order-7", claim)
    await runs.requests.mark_started(key.key_id, "order-7", claim)  # the request sent again resumed it
    await runs.requests.mark_started(key.key_id, "order-7", claim)  # the slow gateway's own mark
    await runs.requests.release(key.key_id, "order-7", claim)  # a started run's key is not freed
    assert (await runs.requests.reserve(key.key_id, "order-7", Claim(run_id="r" * 32, request="d"))).started
