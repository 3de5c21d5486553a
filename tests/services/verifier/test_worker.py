"""The worker as FastStream runs it, against a real redis-server."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass

import pytest
import redis.asyncio as aioredis
from faststream.redis import RedisBroker, StreamSub

from pmsearch.services.verifier import worker
from pmsearch.services.verifier.repository import Repository
from pmsearch.shared.bus import decode, encode, publish
from pmsearch.shared.messages import ProgressEvent, RunResult, VerificationRequested
from pmsearch.shared.settings import VerifierSettings
from pmsearch.shared.streams import DRAFTS_FROM_ANSWERER as DRAFTS
from pmsearch.shared.streams import GROUP, dead_letter, evidence_key, final_key, meta_key, progress_key
from pmsearch.shared.worker import Policy
from tests.services.verifier.factory import M1, evidence, request, run_record


@pytest.fixture
async def client(redis_url: str):
    c = aioredis.from_url(redis_url)
    # Each test gets a fresh drafts stream and group (the group is created by the worker).
    await c.delete(DRAFTS, dead_letter(DRAFTS))
    yield c
    await c.aclose()


@contextlib.asynccontextmanager
async def running(
    redis_url: str, *names: str, reclaim_idle_ms: int = 60_000, settings: VerifierSettings | None = None
):
    policy = Policy(reclaim_idle_ms=reclaim_idle_ms, heartbeat_ms=min(1000, reclaim_idle_ms // 2), reclaim_poll_ms=50)
    apps = [
        worker.build_app(settings or VerifierSettings(redis_url=redis_url), consumer=name, policy=policy)
        for name in names
    ]
    for app in apps:
        await app.start()
    try:
        yield apps
    finally:
        for app in apps:
            await app.stop()


async def wait_for(predicate, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = await predicate()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError("timed out")


@dataclass
class Finished:
    outcome: str
    result: RunResult


async def finished_for(client, run: str) -> list[Finished]:
    """The run's stored result once per ``done`` event published for it."""
    raw = await client.get(final_key(run))
    if raw is None:
        return []
    result = RunResult.model_validate_json(raw)
    events = [decode(f, ProgressEvent) for _, f in await client.xrange(progress_key(run))]
    return [Finished(e.payload["outcome"], result) for e in events if e.event == "done"]


async def pending(client) -> int:
    info = await client.xpending(DRAFTS, GROUP[DRAFTS])
    return info["pending"]


def new_run() -> str:
    return f"run-{uuid.uuid4().hex[:12]}"


async def submit(client, req: VerificationRequested) -> None:
    """Publish a draft of a run the gateway admitted (its record stored first)."""
    await client.set(meta_key(req.run_id), run_record(req).model_dump_json(), ex=600)
    await publish(client, DRAFTS, req)


async def test_faststream_decodes_the_shared_envelope_into_the_model(redis_url: str) -> None:
    stream = f"pm:test:{uuid.uuid4().hex}"
    broker = RedisBroker(redis_url)
    got: asyncio.Future[VerificationRequested] = asyncio.get_running_loop().create_future()

    @broker.subscriber(stream=StreamSub(stream))
    async def on(message: VerificationRequested) -> None:
        got.set_result(message)

    sent = request(text=f"The claim was accepted [{M1}].")
    await broker.start()
    try:
        c = aioredis.from_url(redis_url)
        await publish(c, stream, sent)
        await c.aclose()
        assert await asyncio.wait_for(got, 10) == sent
    finally:
        await broker.stop()


async def test_worker_verifies_a_draft_and_acks_it(redis_url: str, client) -> None:
    run = new_run()
    await client.hset(evidence_key(run), mapping={k: v.model_dump_json() for k, v in evidence().items()})
    async with running(redis_url, "w1"):
        await submit(client, request(run_id=run, text=f"The claim was accepted [{M1}]. Noise."))
        finished = await wait_for(lambda: finished_for(client, run))
        await wait_for(lambda: _zero(pending(client)))
    (event,) = finished
    assert event.outcome == "answered"
    assert event.result.answer.text == "The claim was accepted."
    assert [r.reason for r in event.result.trace.removed_sentences] == ["no_citation"]
    assert await Repository(client).stored_result(run) == event.result
    assert 0 < await client.ttl(evidence_key(run)) <= 600  # kept for replays, not for hours


async def _zero(awaitable) -> bool:
    return (await awaitable) == 0


async def test_two_drafts_two_workers_one_result(redis_url: str, client) -> None:
    runs = [new_run() for _ in range(5)]
    async with running(redis_url, "w1", "w2"):
        for run in runs:
            await client.hset(evidence_key(run), mapping={k: v.model_dump_json() for k, v in evidence().items()})
            await submit(client, request(run_id=run, text=f"The claim was accepted [{M1}]."))
            await submit(client, request(run_id=run, ending="budget_exhausted"))
        for run in runs:
            await wait_for(lambda run=run: finished_for(client, run))
        await wait_for(lambda: _zero(pending(client)))
        await asyncio.sleep(0.3)  # a duplicate, if any, would land now
    for run in runs:
        assert len(await finished_for(client, run)) == 1
        assert await client.exists(final_key(run)) == 1
    assert await client.xlen(dead_letter(DRAFTS)) == 0


async def test_contract_violation_goes_to_dead_letters(redis_url: str, client) -> None:
    async with running(redis_url, "w1"):
        bad = encode(request(text="x"))
        bad[b"__data__" if b"__data__" in bad else "__data__"] = b'{"data": "{\\"run_id\\": 1}", "headers": {}}'
        await client.xadd(DRAFTS, bad)
        await wait_for(lambda: client.xlen(dead_letter(DRAFTS)))
        await wait_for(lambda: _zero(pending(client)))
    (_, fields), = await client.xrange(dead_letter(DRAFTS))
    assert fields[b"error"].startswith(b"verification_request_invalid")
    assert fields[b"deliveries"] == b"1"


async def test_failed_draft_is_retried_by_reclaim(redis_url: str, client, monkeypatch) -> None:
    run = new_run()
    calls = {"n": 0}
    real = Repository.load_evidence

    async def flaky(self, run_id):
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionError("redis blinked")
        return await real(self, run_id)

    monkeypatch.setattr(Repository, "load_evidence", flaky)
    async with running(redis_url, "w1", reclaim_idle_ms=200):
        await submit(client, request(run_id=run, ending="degraded"))
        await wait_for(lambda: finished_for(client, run))
        await wait_for(lambda: _zero(pending(client)))
    assert calls["n"] == 2
    assert await client.xlen(dead_letter(DRAFTS)) == 0


async def test_draft_that_keeps_failing_is_dead_lettered(redis_url: str, client, monkeypatch) -> None:
    async def broken(self, run_id):
        raise ConnectionError("always")

    monkeypatch.setattr(Repository, "load_evidence", broken)
    async with running(redis_url, "w1", reclaim_idle_ms=100):
        await submit(client, request(run_id=new_run(), ending="degraded"))
        await wait_for(lambda: client.xlen(dead_letter(DRAFTS)), timeout=20)
        await wait_for(lambda: _zero(pending(client)))
    (_, fields), = await client.xrange(dead_letter(DRAFTS))
    assert int(fields[b"deliveries"]) == Policy().max_deliveries
    assert VerificationRequested.model_validate_json(
        __import__("json").loads(fields[b"payload"])["data"]
    ).ending == "degraded"


async def test_runs_as_a_process_with_metrics(redis_url: str, client) -> None:
    import os
    import subprocess
    import sys
    import urllib.request
    from pathlib import Path

    from pmsearch.cli.stack import free_port

    root = Path(__file__).resolve().parents[3]
    port = free_port()
    env = {**os.environ, "PM_REDIS_URL": redis_url, "PM_METRICS_PORT": str(port), "PYTHONPATH": str(root)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pmsearch.services.verifier.worker"],
        cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        # The group exists once the worker is subscribed; only then is a draft seen.
        async def subscribed() -> bool:
            return bool(await client.exists(DRAFTS)) and bool(await client.xinfo_groups(DRAFTS))

        await wait_for(subscribed, timeout=30)
        run = new_run()
        await submit(client, request(run_id=run, ending="degraded"))
        (event,) = await wait_for(lambda: finished_for(client, run), timeout=30)
        assert event.outcome == "degraded"
        body = await asyncio.to_thread(
            lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        )
        assert 'pm_runs_finished_total{outcome="degraded"} 1.0' in body
        assert "pm_verifier_seconds_bucket" in body
        # The runtime reports its input streams, the drafts streams included.
        assert 'pm_stream_lag{stream="pm:drafts:answerer"}' in body
        assert 'pm_stream_pending_age_seconds{stream="pm:drafts:answerer"}' in body
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def test_a_slow_verification_keeps_its_draft_from_being_taken_over(redis_url: str, client, monkeypatch) -> None:
    """Verification runs off the event loop: the heartbeats go on, so the other replica
    does not take the draft while a long message is being verified."""
    calls = []
    real = worker.decide_with_verdict

    def slow(*args, **kwargs):
        calls.append(1)
        time.sleep(1.5)  # three reclaim times
        return real(*args, **kwargs)

    monkeypatch.setattr(worker, "decide_with_verdict", slow)
    run = new_run()
    async with running(redis_url, "w1", "w2", reclaim_idle_ms=500):
        await submit(client, request(run_id=run, text=f"The claim was accepted [{M1}]."))
        await wait_for(lambda: finished_for(client, run), timeout=20)
        await asyncio.sleep(1.0)
    assert len(calls) == 1
    assert len(await finished_for(client, run)) == 1
