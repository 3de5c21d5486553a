"""A run's admission, one hash slot a step (``RunService._record_and_publish``,
``RunStore.admit``), against a real Redis: a gateway that dies between two steps leaves
nothing the watchdog does not settle, and a step Redis refuses leaves nothing at all."""

from __future__ import annotations

import asyncio
import secrets
import time
import uuid

import pytest
from redis.exceptions import OutOfMemoryError

from pmsearch.services.gateway.errors import IdempotencyKeyInUse
from pmsearch.services.gateway.repository import GatewayRepository
from pmsearch.services.gateway.runs import service as service_module
from pmsearch.services.gateway.runs.service import RunService
from pmsearch.services.gateway.searcher import Searcher
from pmsearch.services.gateway.watchdog import watchdog_round
from pmsearch.shared import streams
from pmsearch.shared.bus import decode
from pmsearch.shared.messages import RunMeta, RunRequested, VerificationRequested
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
