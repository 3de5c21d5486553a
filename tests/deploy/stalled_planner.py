"""A planner entry stalled past the reclaim time, provoked for real for
tests/deploy/test_prometheus.py: one replica stopped (SIGSTOP) while it holds an entry,
the only other one busy, so nobody heartbeats or takes the entry over.

Why two replicas: the stream gauges are reported by the consuming stage's own processes,
and a stopped process answers no scrape (its series go stale), so the idle entry is seen
only through a live replica of the same stage; that replica must have no free handler
slot, or it would take the entry over within a second of the reclaim time.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import redis

from pmsearch.cli.stack import ROOT, Stack, free_port
from pmsearch.cli.stack import WORKERS as MODULES
from pmsearch.shared import streams
from pmsearch.shared.messages import RunResult
from pmsearch.shared.runstore import RunReader
from pmsearch.testing.scripted_model import Reply, ScriptedModel
from tests.fixtures.prometheus import Prometheus
from tests.fixtures.stack import Api
from tests.fixtures.waiting import wait_for

# Fired while the stopped replica held an observation, resolved once it continued.
STALLED = ("PendingPastReclaimTime", "stream", streams.OBSERVATIONS)
# The slow model call that keeps the other planner replica's only slot busy: long enough
# for the stalled entry to idle past the reclaim time (5 s), be reported (every 5 s),
# scraped and evaluated (every second), with room to spare on a loaded machine.
SLOW_SECONDS = 30.0


def write_targets(path: Path, groups: list[dict]) -> None:
    """A file-based service-discovery list, renamed into place (never read half-written)."""
    partial = path.with_suffix(".tmp")
    partial.write_text(json.dumps(groups))
    os.replace(partial, path)


def holders(admin: redis.Redis, stream: str) -> list[str]:
    """The consumers holding the stream's pending entries."""
    rows = admin.xpending_range(stream, streams.GROUP[stream], min="-", max="+", count=100)
    return [row["consumer"].decode() for row in rows]


def undelivered(admin: redis.Redis, stream: str) -> bool:
    """Whether the stream has entries its stage's group has not read yet (XINFO's lag
    can be unknown after trimming; the last ids cannot)."""
    group = streams.GROUP[stream].encode()
    read = next(g["last-delivered-id"] for g in admin.xinfo_groups(stream) if g["name"] == group)
    return admin.xinfo_stream(stream)["last-generated-id"] != read


def consumer(proc: subprocess.Popen) -> str:
    return f"{socket.gethostname()}-{proc.pid}"  # shared.worker.consumer_name


def firing(prom: Prometheus, alert: str, **labels: str) -> list[dict]:
    return [
        a["labels"] for a in prom.alerts()
        if a["state"] == "firing" and a["labels"]["alertname"] == alert
        and all(a["labels"].get(k) == v for k, v in labels.items())
    ]


def ready(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def stall_a_planner(
    stack: Stack, prom: Prometheus, api: Api, model: ScriptedModel, replicas: Path,
    brain: Callable[[dict], Reply], questions: list[str],
) -> None:
    """A second planner replica with one handler slot per stream takes a run and holds
    its slot in a slow model call. The stack's planner takes a second run's observation
    and is stopped (SIGSTOP): no heartbeat keeps that entry young, and the busy replica
    has no free slot to take it over, so it idles past the reclaim time and the alert
    fires for that stream. The stopped process continues (SIGCONT) and both runs end
    once, answered."""
    admin = stack.redis_client()
    key = api.key("acme/alice")

    def slowly(body: dict) -> Reply:
        return brain(body).model_copy(update={"delay": SLOW_SECONDS})

    stopped = stack.procs["planner"]
    port = free_port()
    env = stack.env_for("planner") | {"PM_METRICS_PORT": str(port), "PM_WORKER_CONCURRENCY": "1"}
    with open(stack.log_dir / "planner-busy.log", "ab") as log:
        busy = subprocess.Popen(
            [sys.executable, "-m", MODULES["planner"]], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def ask(question: str) -> httpx.Response:
        return httpx.post(
            f"{stack.gateway_url}/v1/search", json={"query": question, "mode": "agentic"},
            headers={"Authorization": f"Bearer {key}"}, timeout=SLOW_SECONDS * 5,
        )

    try:
        write_targets(replicas, [{"targets": [f"127.0.0.1:{port}"], "labels": {"job": "planner"}}])
        wait_for(lambda: ready(port), "the second planner replica", timeout=120)
        wait_for(lambda: len(prom.query('up{job="planner"} == 1')) == 2, "both planner replicas scraped")
        api.tenant("acme", **{"search.agentic_max_seconds": SLOW_SECONDS * 4})  # slow calls fit the budget
        model.set_script(slowly)
        with ThreadPoolExecutor(2) as pool:
            try:
                # The stack's planner waits while the busy replica takes the first run;
                # a read it had blocked in (1 s) times out first, so Redis hands it nothing.
                os.kill(stopped.pid, signal.SIGSTOP)
                time.sleep(2)
                first = pool.submit(ask, questions[0])
                wait_for(lambda: consumer(busy) in holders(admin, streams.OBSERVATIONS), "the busy replica's call")
                second = pool.submit(ask, questions[1])
                wait_for(lambda: undelivered(admin, streams.OBSERVATIONS), "the second run's observation")
                os.kill(stopped.pid, signal.SIGCONT)
                wait_for(lambda: consumer(stopped) in holders(admin, streams.OBSERVATIONS), "the second run's call")
                os.kill(stopped.pid, signal.SIGSTOP)
                stalled_at = time.monotonic()
                _, label, stream = STALLED
                wait_for(lambda: firing(prom, STALLED[0], **{label: stream}), "the stalled entry's alert",
                         timeout=SLOW_SECONDS - 8)
                print(f"\n{STALLED[0]} fired for {stream} {time.monotonic() - stalled_at:.1f} s after SIGSTOP")
                # The busy replica answers its scrapes: the stage still has a live process.
                assert not firing(prom, "StageWithoutLiveConsumer", job="planner")
                assert holders(admin, streams.OBSERVATIONS).count(consumer(stopped)) == 1  # not taken over
            finally:
                model.set_script(brain)
                os.kill(stopped.pid, signal.SIGCONT)
            answers = [first.result(timeout=SLOW_SECONDS * 5), second.result(timeout=SLOW_SECONDS * 5)]
        reader = RunReader(admin)
        for resp in answers:
            assert resp.status_code == 200, resp.text
            relayed = RunResult.model_validate(resp.json())
            assert relayed.outcome == "answered", relayed.reason
            assert reader.result(relayed.run_id) == relayed
            dones = [e for e in reader.progress(relayed.run_id) if getattr(e, "event", None) == "done"]
            assert len(dones) == 1, relayed.run_id
        wait_for(lambda: not firing(prom, STALLED[0]), "the stalled entry's alert to resolve")
    finally:
        api.tenant("acme", **{"search.agentic_max_seconds": 8.0})
        write_targets(replicas, [])
        busy.terminate()
        try:
            busy.wait(timeout=15)
        except subprocess.TimeoutExpired:
            busy.kill()
            busy.wait()
        admin.close()
