"""`pmsearch up` as the embedded default's supervisor: a stage killed with SIGKILL is
started again (with backoff) while the rest keep serving, and SIGTERM stops every
process it started, as Ctrl-C does.

The stack is the real one, started by a real `pmsearch up` process on free ports (never
the default 8080/6390), with the scripted model in place of the local one.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from pmsearch.cli.stack import Stack, free_port
from pmsearch.cli.supervisor import Supervisor
from pmsearch.testing.brains import honest

ROOT = Path(__file__).resolve().parents[2]
STAGES = {
    "pmsearch.services.searcher.worker": "searcher",
    "pmsearch.services.planner.worker": "planner",
    "pmsearch.services.answerer.worker": "answerer",
    "pmsearch.services.verifier.worker": "verifier",
    "pmsearch.services.gateway.app": "gateway",
    "redis-server": "redis",
}


# ---------------------------------------------------------------- processes, from /proc


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of a process; None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[1]), fields[0]


def alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[1] != "Z"


def descendants(pid: int) -> dict[int, str]:
    """Every live process below ``pid``, with its command line."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None and stat[1] != "Z":
            parents[int(entry)] = stat[0]
    found: dict[int, str] = {}
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for child, ppid in parents.items():
            if ppid == parent and child not in found:
                try:
                    found[child] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    continue
                frontier.append(child)
    return found


def stages(pid: int) -> dict[str, int]:
    """The stack's processes that ``pmsearch up`` (``pid``) started itself, by name."""
    out: dict[str, int] = {}
    for child, cmdline in descendants(pid).items():
        if _stat(child) is None or _stat(child)[0] != pid:
            continue
        for needle, name in STAGES.items():
            if needle in cmdline:
                out[name] = child
    return out


def wait_for(probe, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := probe():
            return value
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout:g} s")


# ---------------------------------------------------------------- `pmsearch up`


@dataclass
class Up:
    proc: subprocess.Popen
    output_path: Path
    gateway_url: str
    var_dir: Path

    def output(self) -> str:
        return self.output_path.read_text(errors="replace")


@pytest.fixture(scope="module")
def up(tmp_path_factory, stack_model) -> Iterator[Up]:
    var = tmp_path_factory.mktemp("up")
    gateway_port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PM_")}
    env.update(
        PM_VAR_DIR=str(var),
        PM_REDIS_PORT=str(free_port()),
        PM_GATEWAY_PORT=str(gateway_port),
        PM_DEMO_DIR=str(ROOT / "data" / "demo"),
        PM_MODEL_BASE_URL=stack_model.base_url,
        PM_MODEL_OUTPUT="json_schema",
        PM_AGENT_MODEL="scripted",
        COLUMNS="400",  # one line per report
    )
    output = var / "up.out"
    with open(output, "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pmsearch.cli.main", "up"], cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    started = Up(proc, output, f"http://127.0.0.1:{gateway_port}", var)
    seen: dict[int, str] = {}
    try:
        def ready() -> bool:
            seen.update(descendants(proc.pid))
            if proc.poll() is not None:
                raise AssertionError(f"pmsearch up exited with {proc.returncode}:\n{started.output()[-3000:]}")
            return "Ctrl-C stops everything" in started.output()

        wait_for(ready, 900, "pmsearch up ready")
        yield started
    finally:
        seen.update(descendants(proc.pid))
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for pid in seen:  # whatever it left behind, by the pids it started
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def alice(up: Up) -> dict[str, str]:
    keys = json.loads((up.var_dir / "demo-keys.json").read_text())
    return {"Authorization": f"Bearer {keys['acme/alice']}"}


def test_a_stage_killed_with_sigkill_is_restarted_while_the_rest_keep_serving(up, stack_model):
    before = stages(up.proc.pid)
    assert set(before) == set(STAGES.values()), before
    os.kill(before["answerer"], signal.SIGKILL)

    def restarted() -> dict[str, int] | None:
        now = stages(up.proc.pid)
        return now if now.get("answerer", before["answerer"]) != before["answerer"] else None

    after = wait_for(restarted, 30, "answerer restarted")
    assert up.proc.poll() is None
    assert {n: p for n, p in after.items() if n != "answerer"} == {n: p for n, p in before.items() if n != "answerer"}
    assert re.search(r"answerer was killed by SIGKILL; restarting it in 1 s", up.output())

    stack_model.reset()
    stack_model.set_script(honest())
    resp = httpx.post(
        f"{up.gateway_url}/v1/search", headers=alice(up), timeout=180,
        json={"query": "Did the insurer accept the Golf claim after we sent the photos?", "mode": "agentic"},
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["outcome"] == "answered"


def test_a_waiting_request_cut_by_a_gateway_kill_is_sent_again_and_follows_its_run(up, stack_model):
    def slow_honest(body):
        return honest()(body).model_copy(update={"delay": 3.0})

    stack_model.reset()
    stack_model.set_script(slow_honest)
    ask = {"query": "Who is handling the Golf claim at the insurer?", "mode": "agentic"}
    headers = {**alice(up), "Idempotency-Key": f"cut-{time.time_ns()}"}
    cut: list[BaseException] = []

    def first() -> None:
        try:
            httpx.post(f"{up.gateway_url}/v1/search", headers=headers, json=ask, timeout=180)
        except httpx.TransportError as exc:
            cut.append(exc)

    waiting = threading.Thread(target=first)
    waiting.start()
    wait_for(lambda: stack_model.bodies, 30, "the run's model call")  # admitted, published, running
    before = stages(up.proc.pid)
    os.kill(before["gateway"], signal.SIGKILL)
    waiting.join(30)
    assert cut, "the waiting request outlived its gateway"
    wait_for(lambda: stages(up.proc.pid).get("gateway", before["gateway"]) != before["gateway"], 30, "gateway restarted")
    wait_for(lambda: _healthy(up.gateway_url), 60, "gateway serving")

    again = httpx.post(f"{up.gateway_url}/v1/search", headers=headers, json=ask, timeout=180)
    assert again.status_code == 200, again.text
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json()["outcome"] == "answered"
    # Every model call was the followed run's: the resend started no second run.
    assert len(stack_model.bodies) == again.json()["usage"]["model_calls"]


def test_pmsearch_ask_follows_its_run_through_a_gateway_kill(up, stack_model):
    def slow_honest(body):
        return honest()(body).model_copy(update={"delay": 3.0})

    stack_model.reset()
    stack_model.set_script(slow_honest)
    keys = json.loads((up.var_dir / "demo-keys.json").read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith("PM_")}
    env.update(PM_API_KEY=keys["acme/alice"], PM_GATEWAY_URL=up.gateway_url, COLUMNS="400")
    asking = subprocess.Popen(
        [sys.executable, "-m", "pmsearch.cli.main", "ask", "--json", "Who is handling the Golf claim at the insurer?"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_for(lambda: stack_model.bodies, 30, "the run's model call")
        os.kill(stages(up.proc.pid)["gateway"], signal.SIGKILL)
        out, err = asking.communicate(timeout=120)
    finally:
        if asking.poll() is None:
            asking.kill()
    assert asking.returncode == 0, err
    result = json.loads(out)
    assert result["outcome"] == "answered"
    assert len(stack_model.bodies) == result["usage"]["model_calls"]  # one run, followed through the kill


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def test_sigterm_stops_every_process_pmsearch_up_started(up):
    started = descendants(up.proc.pid)
    assert set(stages(up.proc.pid)) == set(STAGES.values())
    up.proc.send_signal(signal.SIGTERM)
    assert up.proc.wait(timeout=90) == 0
    assert "stopping" in up.output()
    left = {pid: cmd for pid, cmd in started.items() if alive(pid)}
    assert not left, left


# ---------------------------------------------------------------- backoff


def test_a_process_that_keeps_dying_is_restarted_ever_later_then_forgiven(tmp_path):
    stack = Stack(tmp_path, services=())
    stack._spawn("sleeper", [sys.executable, "-c", "import time; time.sleep(600)"], dict(os.environ))
    now = [0.0]
    reports: list[str] = []
    supervisor = Supervisor(stack, report=reports.append, clock=lambda: now[0])
    delays = []

    def die() -> subprocess.Popen:
        proc = stack.procs["sleeper"]
        proc.kill()
        proc.wait()
        supervisor.check()
        return proc

    try:
        supervisor.check()
        for _ in range(4):
            dead = die()
            delay = float(re.search(r"restarting it in ([\d.]+) s", reports[-1]).group(1))
            delays.append(delay)
            now[0] += delay - 0.1
            supervisor.check()
            assert stack.procs["sleeper"] is dead  # not before its time
            now[0] += 0.1
            supervisor.check()
            assert stack.procs["sleeper"] is not dead and alive(stack.procs["sleeper"].pid)
        assert delays == [1, 2, 4, 8]
        assert "sleeper was killed by SIGKILL" in reports[0]
        now[0] += 60  # a minute up: the exits in a row are forgiven
        supervisor.check()
        die()
        assert "restarting it in 1 s" in reports[-1]
    finally:
        stack.stop()
