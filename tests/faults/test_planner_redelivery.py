"""A planner that dies between a transition's mark and its effect: the message is
redelivered, and the run still ends once.

Against a real redis-server and the scripted model. A crash is :class:`Crash`, a
``BaseException`` nothing in the planner catches, raised at one point of a transition:
nothing after it runs, as when the process is killed there (the worker then leaves the
message pending, and the group redelivers it). The test redelivers that message itself,
plays the searcher for every tool batch the planner sends (duplicates included, as a
real searcher would), and counts how the run ended.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import redis as sync_redis

from pmsearch.services.planner import service as planner_service
from pmsearch.services.planner.repository import PlannerRepository
from pmsearch.services.planner.service import Planner
from pmsearch.shared import streams
from pmsearch.shared.bus import decode, encode
from pmsearch.shared.llm import ModelClient
from pmsearch.shared.messages import (
    AnswerRequested,
    HitsResult,
    RunRequested,
    ToolBatchCompleted,
    ToolBatchRequested,
    ToolOutcome,
    VerificationRequested,
)
from pmsearch.shared.scope import Scope, sign_scope
from pmsearch.testing.brains import honest
from pmsearch.testing.scripted_model import Reply
from tests.fixtures.redis_server import redis_server
from tests.services.planner.test_service import ACCEPT, PHOTOS, QUESTION, hit, published
from tests.shared.llm.helpers import settings

ROOT = Path(__file__).resolve().parents[2]


class Crash(BaseException):
    """The planner process dies here."""


@pytest.fixture
async def planner(redis, scripted_model):
    model = ModelClient(settings(scripted_model.base_url, model_retries=0))
    # The first attempt finds no answer, the search round asks for one search, and the
    # attempt after it answers: every kind of transition happens once.
    scripted_model.set_script(honest(lambda q: "Golf claim decision"))
    yield Planner(PlannerRepository(redis), model)
    await model.aclose()


def run_request(max_steps: int = 3) -> RunRequested:
    run_id = f"run-{uuid.uuid4().hex[:12]}"
    scope = Scope(tenant_id="acme", principal="alice", mailboxes=("alice",), run_id=run_id, expires_at=time.time() + 60)
    return RunRequested(
        run_id=run_id, tenant_id="acme", scope_token=sign_scope(scope, "test-key"), deadline=time.time() + 30,
        question=QUESTION, max_steps=max_steps, max_seconds=30, started_at=time.time(),
    )


async def deliver(handle: Callable[[], Awaitable[None]]) -> int:
    """Handle a message; when the worker dies on it, deliver it again. The deliveries."""
    try:
        await handle()
        return 1
    except Crash:
        await handle()
        return 2


async def play_searcher(planner: Planner, redis, req: RunRequested) -> int:
    """Answer each tool batch of the run once per entry, until none is left; the
    deliveries made."""
    served: set[bytes] = set()
    deliveries = 0
    while True:
        todo = [
            (entry, batch)
            for entry, batch in ((e, decode(f, ToolBatchRequested)) for e, f in await redis.xrange(streams.TOOLS))
            if batch.run_id == req.run_id and entry not in served
        ]
        if not todo:
            return deliveries
        for entry, batch in todo:
            served.add(entry)
            found = [PHOTOS] if batch.step == 0 else [ACCEPT]
            await redis.hset(streams.evidence_key(req.run_id), mapping={m.message_id: m.model_dump_json() for m in found})
            outcomes = [
                ToolOutcome(call_id=c.call_id, tool=c.tool, arguments=c.arguments, ok=True,
                            message_ids=[m.message_id for m in found], output=HitsResult(hits=[hit(m) for m in found]))
                for c in batch.calls
            ]
            done = ToolBatchCompleted(run_id=req.run_id, tenant_id="acme", scope_token=req.scope_token,
                                      deadline=req.deadline, step=batch.step, outcomes=outcomes)
            deliveries += await deliver(lambda done=done: planner.observe(done))


def crash_on_publish(planner: Planner, stream: str, step: int | None = None) -> None:
    """Die the first time ``stream`` is about to get a message (of ``step``)."""
    real = planner.repo.publish
    armed = [True]

    async def publish(to: str, message) -> None:
        if armed[0] and to == stream and (step is None or message.step == step):
            armed[0] = False
            raise Crash
        await real(to, message)

    planner.repo.publish = publish  # type: ignore[method-assign]


def crash_on_model_call(monkeypatch, n: int) -> None:
    """Die while the ``n``-th model call is under way (its state saved before it)."""
    real = planner_service.call_model
    calls = [0]

    async def call_model(*args, **kwargs):
        calls[0] += 1
        if calls[0] == n:
            raise Crash
        return await real(*args, **kwargs)

    monkeypatch.setattr(planner_service, "call_model", call_model)


def crash_on_advance(planner: Planner) -> None:
    """Die after an observation is recorded, before the run moves on."""
    real = planner.advance
    armed = [True]

    async def advance(run_id: str) -> None:
        if armed[0]:
            armed[0] = False
            raise Crash
        await real(run_id)

    planner.advance = advance  # type: ignore[method-assign]


CRASHES = {
    "after the run is saved, before its first search is sent": lambda p, mp: crash_on_publish(p, streams.TOOLS, 0),
    "after the first search is recorded, before the run moves on": lambda p, mp: crash_on_advance(p),
    "during the first answer attempt": lambda p, mp: crash_on_model_call(mp, 1),
    "during the search round": lambda p, mp: crash_on_model_call(mp, 2),
    "after the search round, before its searches are sent": lambda p, mp: crash_on_publish(p, streams.TOOLS, 1),
    "during the attempt after the search round": lambda p, mp: crash_on_model_call(mp, 3),
}


@pytest.mark.parametrize("where", list(CRASHES))
async def test_a_planner_that_dies_mid_transition_still_ends_the_run_once(planner, redis, scripted_model, monkeypatch, where):
    CRASHES[where](planner, monkeypatch)
    req = run_request()
    deliveries = await deliver(lambda: planner.start(req))
    deliveries += await play_searcher(planner, redis, req)
    assert deliveries > 2  # the run, one observation per step, and the redelivery

    handed = await published(redis, streams.ANSWERS, AnswerRequested, req.run_id)
    ended = await published(redis, streams.DRAFTS_FROM_PLANNER, VerificationRequested, req.run_id)
    assert (len(handed), len(ended)) == (1, 0), f"{where}: {len(handed)} answers, {[e.ending for e in ended]} endings"
    (answer,) = handed
    assert answer.carried and answer.focus[:1] == ["m-accept"]  # the search round's find first
    assert answer.usage.steps == 2
    assert (await planner.repo.load(req.run_id)).decision == "done"


async def test_a_redelivered_run_whose_first_search_was_sent_does_not_send_it_again(planner, redis):
    req = run_request()
    await planner.start(req)
    await planner.start(req)
    batches = await published(redis, streams.TOOLS, ToolBatchRequested, req.run_id)
    assert [b.step for b in batches] == [0]


async def test_a_reply_of_a_call_taken_over_is_dropped(planner, redis, scripted_model, monkeypatch):
    """A worker presumed dead (its message redelivered) that answers after all: only
    the redelivery's reply counts, so the run takes one step, not two."""
    req = run_request()
    await planner.start(req)
    real = planner_service.call_model
    took_over = [False]

    async def slow_then_overtaken(*args, **kwargs):
        reply = await real(*args, **kwargs)
        if not took_over[0]:
            took_over[0] = True
            # While this call was under way, the message was redelivered to another worker.
            monkeypatch.setattr(planner_service, "call_model", real)
            await planner.advance(req.run_id)
        return reply

    monkeypatch.setattr(planner_service, "call_model", slow_then_overtaken)
    await play_searcher(planner, redis, req)
    (answer,) = await published(redis, streams.ANSWERS, AnswerRequested, req.run_id)
    assert answer.usage.steps == 2
    assert [t.kind for t in answer.trace.steps].count("decide") == 2


# ---------------------------------------------------------------- a real planner process, killed


@pytest.fixture
def private_redis(tmp_path) -> Iterator[str]:
    (tmp_path / "redis").mkdir()
    with redis_server(tmp_path / "redis") as url:
        yield url


def start_planner(url: str, model_url: str, log: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PM_")}
    env.update(
        PYTHONPATH=str(ROOT), PM_REDIS_URL=url, PM_MODEL_BASE_URL=model_url, PM_AGENT_MODEL="scripted",
        PM_MODEL_OUTPUT="json_schema", PM_MODEL_RETRIES="0", PM_MODEL_TIMEOUT_SECONDS="60",
        # Take a dead consumer's entries over after a second, not five.
        PM_WORKER_RECLAIM_IDLE_SECONDS="1", PM_WORKER_HEARTBEAT_SECONDS="0.2",
    )
    with open(log, "ab") as sink:
        return subprocess.Popen([sys.executable, "-m", "pmsearch.services.planner.worker"], cwd=ROOT, env=env,
                                stdout=sink, stderr=subprocess.STDOUT)


def wait_until(probe: Callable[[], object], timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := probe():
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {timeout:g} s")


def test_a_planner_killed_during_its_answer_attempt_is_taken_over_and_the_run_answered_once(
    private_redis, scripted_model, tmp_path
):
    """SIGKILL while the model call is under way (the run saved as judging); another
    planner takes the observation over and makes the call again."""
    first = [True]

    def brain(body):
        if first[0]:
            first[0] = False
            return Reply(hang=30)  # the planner is killed meanwhile
        return honest()(body)

    scripted_model.set_script(brain)
    admin = sync_redis.Redis.from_url(private_redis)
    planners = [start_planner(private_redis, scripted_model.base_url, tmp_path / "planner.log")]
    try:
        req = run_request(max_steps=1)
        admin.xadd(streams.RUNS, encode(req))
        (entry, fields), = wait_until(lambda: admin.xrange(streams.TOOLS), 60, "first search sent")
        batch = decode(fields, ToolBatchRequested)
        admin.hset(streams.evidence_key(req.run_id), mapping={m.message_id: m.model_dump_json() for m in (PHOTOS, ACCEPT)})
        outcome = ToolOutcome(call_id=batch.calls[0].call_id, tool="search", arguments=batch.calls[0].arguments, ok=True,
                              message_ids=["m-photos", "m-accept"], output=HitsResult(hits=[hit(PHOTOS), hit(ACCEPT)]))
        admin.xadd(streams.OBSERVATIONS, encode(ToolBatchCompleted(
            run_id=req.run_id, tenant_id="acme", scope_token=req.scope_token, deadline=req.deadline, step=0, outcomes=[outcome])))
        wait_until(lambda: scripted_model.bodies, 30, "the answer attempt under way")
        planners[0].kill()
        planners[0].wait()
        planners.append(start_planner(private_redis, scripted_model.base_url, tmp_path / "planner.log"))

        handed = wait_until(lambda: admin.xrange(streams.ANSWERS), 60, "the run handed to the answerer")
        time.sleep(1.5)  # nothing more comes
        assert len(admin.xrange(streams.ANSWERS)) == len(handed) == 1
        answer = decode(handed[0][1], AnswerRequested)
        assert answer.run_id == req.run_id and answer.carried and answer.usage.steps == 1
        assert len(scripted_model.bodies) == 2
    finally:
        for proc in planners:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        admin.close()
