"""Worker processes killed, and Redis flushed, under the shared worker runtime: a message
that kills its worker ends in the dead-letter stream, live long work is not taken from a
consumer that heartbeats (but is from one that was killed), and a flushed Redis does not
stop a stage.

Real processes against a real redis-server of this module (it gets flushed); the tests
play the supervisor that restarts a dead worker.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from pmsearch.shared.bus import decode, encode
from pmsearch.shared.messages import (
    AnswerRequested,
    DraftSentence,
    RunRequested,
    ToolBatchRequested,
    Trace,
    Usage,
    VerificationRequested,
)
from pmsearch.shared.streams import (
    ANSWERS,
    DRAFTS_FROM_ANSWERER,
    RUNS,
    TOOLS,
    dead_letter,
    evidence_key,
    final_key,
    meta_key,
)
from tests.faults.worker_proc import GROUP, POLICY, Task
from tests.fixtures.redis_server import redis_server
from tests.services.verifier.factory import evidence, request, run_record

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def url(tmp_path_factory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("faults-redis")) as u:
        yield u


@pytest.fixture
def admin(url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(url)
    yield client
    client.close()


class Procs:
    """Processes this test started; each stopped (by its own handle) at the end."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen] = []

    def start(self, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, *argv], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        )
        self.started.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.started:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def procs() -> Iterator[Procs]:
    p = Procs()
    yield p
    p.stop_all()


def wait_until(predicate: Callable[[], object], timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


# ---------------------------------------------------------------- test workers


def calls(admin: redis.Redis, stream: str) -> list[tuple[str, str, int, int]]:
    rows = [r.decode().split() for r in admin.lrange(f"{stream}:calls", 0, -1)]
    return [(kind, entry, int(count), int(pid)) for kind, entry, count, pid in rows]


def start_worker(procs: Procs, admin: redis.Redis, url: str, stream: str) -> subprocess.Popen:
    proc = procs.start(["-m", "tests.faults.worker_proc", url, stream])
    wait_until(lambda: any(k == "ready" and pid == proc.pid for k, _, _, pid in calls(admin, stream)), 30, "worker ready")
    return proc


def post(admin: redis.Redis, stream: str, task: Task) -> str:
    return admin.xadd(stream, encode(task)).decode()


def test_sigterm_lets_running_work_finish_then_runs_the_stop_hooks_and_exits_cleanly(procs, admin, url):
    stream = f"pm:fault:{uuid.uuid4().hex[:8]}"
    proc = start_worker(procs, admin, url, stream)
    entry = post(admin, stream, Task(kind="long", seconds=1.0))
    wait_until(lambda: any(k == "start" and e == entry for k, e, _, _ in calls(admin, stream)), 10, "handler started")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=15) == 0
    kinds = [(kind, e) for kind, e, _, pid in calls(admin, stream) if pid == proc.pid]
    assert kinds[-2:] == [("end", entry), ("stopped", "-")]  # the work, then the stop hooks
    assert admin.xpending(stream, GROUP)["pending"] == 0  # acknowledged before the exit


@pytest.mark.parametrize("death", ["exit", "sigkill"])
def test_a_message_that_kills_its_worker_is_dead_lettered_after_max_deliveries(procs, admin, url, death):
    stream = f"pm:fault:{uuid.uuid4().hex[:8]}"
    proc = start_worker(procs, admin, url, stream)
    poison = post(admin, stream, Task(kind=death))
    restarts, deadline = 0, time.monotonic() + 90
    while not admin.xlen(dead_letter(stream)):
        assert time.monotonic() < deadline, f"not dead-lettered; handler runs: {calls(admin, stream)}"
        if proc.poll() is not None:  # the supervisor's part: start the dead worker again
            assert proc.returncode != 0
            restarts += 1
            assert restarts <= POLICY.max_deliveries, "redelivered past the limit"
            proc = start_worker(procs, admin, url, stream)
        time.sleep(0.05)

    runs = [(count, pid) for kind, entry, count, pid in calls(admin, stream) if kind == "start" and entry == poison]
    assert [count for count, _ in runs] == list(range(1, POLICY.max_deliveries + 1))
    assert restarts == POLICY.max_deliveries
    ((_, fields),) = admin.xrange(dead_letter(stream))
    assert fields[b"error"].startswith(b"too_many_deliveries")
    assert int(fields[b"deliveries"]) == POLICY.max_deliveries + 1
    assert Task.model_validate_json(json.loads(fields[b"payload"])["data"]).kind == death
    wait_until(lambda: admin.xpending(stream, GROUP)["pending"] == 0, 10, "the poison acknowledged")

    # The worker that parked it goes on serving.
    fine = post(admin, stream, Task(kind="ok"))
    wait_until(lambda: any(k == "end" and e == fine for k, e, _, _ in calls(admin, stream)), 15, "the next message")
    assert proc.poll() is None


def test_a_long_handler_is_not_taken_by_a_second_consumer_while_it_heartbeats(procs, admin, url):
    stream = f"pm:fault:{uuid.uuid4().hex[:8]}"
    start_worker(procs, admin, url, stream)
    start_worker(procs, admin, url, stream)
    seconds = 5 * POLICY.reclaim_idle_ms / 1000  # five reclaim idle times
    entry = post(admin, stream, Task(kind="long", seconds=seconds))
    wait_until(lambda: any(k == "end" and e == entry for k, e, _, _ in calls(admin, stream)), seconds + 20, "the end")
    time.sleep(POLICY.reclaim_idle_ms / 1000)  # a late second run would have started by now
    runs = [(kind, count) for kind, e, count, _ in calls(admin, stream) if e == entry]
    assert runs == [("start", 1), ("end", 1)]
    assert admin.xpending(stream, GROUP)["pending"] == 0


def test_a_killed_consumers_long_handler_is_taken_over_by_the_survivor(procs, admin, url):
    stream = f"pm:fault:{uuid.uuid4().hex[:8]}"
    workers = {p.pid: p for p in (start_worker(procs, admin, url, stream), start_worker(procs, admin, url, stream))}
    entry = post(admin, stream, Task(kind="long", seconds=2.0))
    first = wait_until(
        lambda: next((pid for k, e, _, pid in calls(admin, stream) if k == "start" and e == entry), None), 15, "a start"
    )
    os.kill(first, signal.SIGKILL)
    workers[first].wait(timeout=10)
    wait_until(lambda: any(k == "end" and e == entry for k, e, _, _ in calls(admin, stream)), 30, "the takeover's end")
    runs = [(kind, count, pid) for kind, e, count, pid in calls(admin, stream) if e == entry]
    survivor = next(pid for pid in workers if pid != first)
    assert runs == [("start", 1, first), ("start", 2, survivor), ("end", 2, survivor)]


# ---------------------------------------------------------------- a flushed Redis


def _verifier_message(admin: redis.Redis) -> Callable[[], bool]:
    run = f"run-{uuid.uuid4().hex[:10]}"
    req = request(run_id=run, ending="degraded")
    admin.hset(evidence_key(run), mapping={k: v.model_dump_json() for k, v in evidence().items()})
    admin.set(meta_key(run), run_record(req).model_dump_json(), ex=600)
    admin.xadd(DRAFTS_FROM_ANSWERER, encode(req))
    return lambda: bool(admin.exists(final_key(run)))


def _planner_message(admin: redis.Redis) -> Callable[[], bool]:
    run, now = f"run-{uuid.uuid4().hex[:10]}", time.time()
    admin.xadd(RUNS, encode(RunRequested(
        run_id=run, tenant_id="acme", scope_token="token", deadline=now + 60, question="Was the claim accepted?",
        max_steps=2, max_seconds=60, started_at=now,
    )))
    return lambda: any(decode(f, ToolBatchRequested).run_id == run for _, f in admin.xrange(TOOLS))


def _answerer_message(admin: redis.Redis) -> Callable[[], bool]:
    run = f"run-{uuid.uuid4().hex[:10]}"
    admin.xadd(ANSWERS, encode(AnswerRequested(
        run_id=run, tenant_id="acme", scope_token="token", deadline=time.time() + 60, question="Was it accepted?",
        step=1, trace=Trace(), usage=Usage(), proposed=[DraftSentence(text="It was accepted.", citations=[])],
    )))
    return lambda: any(decode(f, VerificationRequested).run_id == run for _, f in admin.xrange(DRAFTS_FROM_ANSWERER))


STAGES = {
    "verifier": ("pm:drafts:answerer", _verifier_message),
    "planner": ("pm:runs", _planner_message),
    "answerer": ("pm:answers", _answerer_message),
}


@pytest.mark.parametrize("stage", list(STAGES))
def test_a_flushed_redis_does_not_stop_a_stage(procs, admin, url, stage):
    stream, message = STAGES[stage]
    admin.flushall()
    env = {"PM_REDIS_URL": url, "PM_MODEL_BASE_URL": "http://127.0.0.1:9/v1", "PM_WORKER_CONCURRENCY": "4"}
    proc = procs.start(["-m", f"pmsearch.services.{stage}.worker"], env)
    wait_until(lambda: admin.exists(stream) and admin.xinfo_groups(stream), 60, f"the {stage}'s group")
    wait_until(message(admin), 20, f"the {stage} handling a message")

    admin.flushall()  # groups, streams and keys gone, as after a restart without AOF
    handled = message(admin)  # published before the stage has noticed
    wait_until(handled, 20, f"the {stage} handling a message after the flush")
    assert proc.poll() is None
    assert admin.xinfo_groups(stream)[0]["name"] == stage.encode()
