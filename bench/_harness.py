"""What the soak and the load benchmark share: the scripted model in its own process, the
whole stack on free ports with the demo mailbox, and an SSE reader.

Only loopback: the stack binds 127.0.0.1 on ports the kernel picks, never the default
8080/6390 of `pmsearch up`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from pmsearch.cli.stack import Stack

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "data" / "demo"
# Demo questions alice's key may ask; every run asks one of them in turn.
QUESTIONS = [
    "Did the insurer accept the Golf claim after we sent the photos?",
    "Who is handling the Golf claim at the insurer?",
    "Where does Spedition Hüber pick up from April?",
]
EVALS = ROOT / "evals" / "demo.yaml"


def eval_questions(key: str = "acme/alice") -> list[str]:
    """The labelled demo questions ``key`` asks (every kind), in the file's order: a load
    that asks many different questions, so no cache of repeated texts flatters it."""
    import yaml

    items = yaml.safe_load(EVALS.read_text(encoding="utf-8"))
    return [item["question"] for item in items if item.get("key") == key]


def scrape(port: int) -> dict[str, float]:
    """One process's metrics (``/metrics`` on its operator port): ``name{labels}`` to value."""
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            out[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return out


@dataclass
class ModelServer:
    base_url: str
    pid: int


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a live process has used (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def scripted_model(latency: float, work: Path, search_round: bool = False) -> Iterator[ModelServer]:
    """The honest scripted model (bench/_model.py) answering after ``latency`` seconds,
    with a search round before the answer if ``search_round``."""
    work.mkdir(parents=True, exist_ok=True)
    port_file = work / "model.port"
    port_file.unlink(missing_ok=True)
    with open(work / "model.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench._model", "--latency", str(latency), "--port-file", str(port_file)]
            + (["--search-round"] if search_round else []),
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the scripted model did not start; see {work / 'model.log'}")
            time.sleep(0.1)
        yield ModelServer(f"http://127.0.0.1:{int(port_file.read_text())}/v1", proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def demo_stack(
    work: Path, model_url: str, env: dict[str, str], tenant: dict[str, Any], *, sentinel: bool = False,
    cluster: bool = False,
) -> Iterator[tuple[Stack, str]]:
    """Redis (with ``sentinel``, a primary, a replica and three sentinels), the four
    stages and the gateway on free ports, with the demo mailbox loaded and tenant acme's
    settings patched with ``tenant``; yields the stack and alice's key."""
    from rich.console import Console

    from pmsearch.cli.demo import load_demo

    stack = Stack(
        work / "stack",
        extra_env={"PM_MODEL_BASE_URL": model_url, "PM_MODEL_OUTPUT": "json_schema", "PM_AGENT_MODEL": "scripted", **env},
        sentinel=sentinel,
        cluster=cluster,
    )
    try:
        stack.start()
        keys = load_demo(stack, DEMO, Console(quiet=True))
        admin = {"Authorization": f"Bearer {stack.secrets.admin_token}"}
        httpx.patch(
            f"{stack.gateway_url}/v1/admin/tenants/acme/settings", json=tenant, headers=admin, timeout=30
        ).raise_for_status()
        yield stack, keys["acme/alice"]
    finally:
        stack.stop()


@dataclass
class Event:
    event: str
    id: str | None
    data: str


async def sse_events(resp: httpx.Response) -> AsyncIterator[Event]:
    """The events of an SSE response as they arrive (comments, i.e. pings, skipped)."""
    event, event_id, data = "message", None, []
    async for line in resp.aiter_lines():
        if not line:
            if data:
                yield Event(event, event_id, "\n".join(data))
            event, event_id, data = "message", None, []
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "id":
                event_id = value
            elif name == "data":
                data.append(value)


def retry_after(resp: httpx.Response) -> float | None:
    """The response's ``Retry-After`` in seconds, or None when it has none."""
    value = resp.headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
