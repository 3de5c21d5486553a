"""Which of pmsearch's Redis commands a Redis Cluster would refuse: every transaction
(MULTI … EXEC) and every multi-key command the running stack sends, grouped by the
service's Redis user, with the hash slots its keys fall on.

The whole stack on one redis-server (scripted model, demo mailbox), watched with
``MONITOR`` from before the demo mailbox is loaded: the ingest, agentic runs (waiting and
streamed), a cancel, direct searches and the administrator's key list. A command or a
transaction whose keys lie on more than one slot fails in a cluster (``CROSSSLOT``);
the table lists each shape once, with how often it was sent. What the workload does not
exercise is not seen: the table is a floor, not a proof.

    python -m bench.slots [--runs 6]

Prints the table and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import httpx
import redis
from redis.crc import key_slot

from bench._harness import DEMO, scripted_model
from bench._util import emit_json, format_table
from bench.soak import drive
from pmsearch.cli.stack import Stack

# Ids and numbers vary from one command to the next; a shape names the key's pattern.
_VARYING = re.compile(r"\{[^}]*\}|[0-9a-f]{16,}|\d{6,}(-\d+)?|\d{8}")


def shape(key: str) -> str:
    return _VARYING.sub("*", key)


class Watch(threading.Thread):
    """MONITOR the stack's Redis as admin; each client's transactions and multi-key
    commands, with their keys (``COMMAND GETKEYS``)."""

    def __init__(self, stack: Stack) -> None:
        super().__init__(daemon=True)
        self.stack = stack
        self.stop = threading.Event()
        self.lines: list[tuple[str, list[str]]] = []  # (client address, argv)
        self.ready = threading.Event()

    def run(self) -> None:
        client = self.stack.redis_client()
        with client.monitor() as monitor:
            self.ready.set()
            while not self.stop.is_set():
                try:
                    # The raw line: redis-py's own parsing drops the quotes that tell
                    # one argument from the next.
                    raw = monitor.connection.read_response()
                except redis.ConnectionError:
                    break
                line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
                found = MONITOR_LINE.match(line)
                if found:
                    self.lines.append((found.group(1), monitor_argv(found.group(2))))

    def end(self) -> None:
        self.stop.set()
        self.stack.redis_client().ping()  # one more line wakes the reader
        self.join(10)


MONITOR_LINE = re.compile(r"^\S+ \[\d+ ([^\]]+)\] (.*)$", re.S)
_ARG = re.compile(r'"((?:[^"\\]|\\.)*)"')
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|.)")


def monitor_argv(command: str) -> list[str]:
    """MONITOR's quoted arguments back into strings (keys are plain ASCII; values only
    need to keep their place)."""
    def unescape(m: re.Match[str]) -> str:
        code = m.group(1)
        if code.startswith("x") and len(code) == 3:
            return chr(int(code[1:], 16))
        return {"n": "\n", "r": "\r", "t": "\t"}.get(code, code)

    return [_ESCAPE.sub(unescape, a) for a in _ARG.findall(command)]


def users_by_address(stack: Stack) -> dict[str, str]:
    out = {}
    for client in stack.redis_client().client_list():
        out[client["addr"]] = client.get("user", "?")
    return out


def audit(lines: list[tuple[str, list[str]]], admin: redis.Redis, users: dict[str, str]) -> list[dict[str, Any]]:
    """One row per (user, kind, shape): its slot count and how often it was sent."""
    keys_of: dict[tuple[str, ...], list[str]] = {}

    def keys(argv: list[str]) -> list[str]:
        if argv[0].upper() in ("MULTI", "EXEC", "DISCARD", "PING", "MONITOR", "AUTH", "HELLO", "CLIENT", "SELECT"):
            return []
        cached = keys_of.get(tuple(argv))
        if cached is None:
            try:
                cached = [k.decode() if isinstance(k, bytes) else k for k in admin.command_getkeys(*argv)]
            except redis.ResponseError:
                cached = []
            keys_of[tuple(argv)] = cached
        return cached

    rows: Counter[tuple[str, str, str, int]] = Counter()
    open_tx: dict[str, list[list[str]]] = {}
    for addr, argv in lines:
        name = argv[0].upper()
        user = users.get(addr, "?")
        if name == "MULTI":
            open_tx[addr] = []
            continue
        if name in ("EXEC", "DISCARD") and addr in open_tx:
            queued = open_tx.pop(addr)
            slots = {key_slot(k.encode()) for cmd in queued for k in keys(cmd)}
            if slots:
                what = " + ".join(sorted({f"{c[0].upper()} {shape(k)}" for c in queued for k in keys(c)}))
                rows[(user, "MULTI", what, len(slots))] += 1
            continue
        if addr in open_tx:
            open_tx[addr].append(argv)
            continue
        found = keys(argv)
        if len(set(found)) > 1:
            rows[(user, name, " ".join(shape(k) for k in found), len({key_slot(k.encode()) for k in found}))] += 1
    return [
        {"user": u, "kind": kind, "keys": what, "slots": slots, "sent": n}
        for (u, kind, what, slots), n in sorted(rows.items(), key=lambda r: (-r[0][3], r[0][0], r[0][2]))
    ]


def workload(stack: Stack, key: str, runs: int) -> None:
    admin = {"Authorization": f"Bearer {stack.secrets.admin_token}"}
    user = {"Authorization": f"Bearer {key}"}
    asyncio.run(drive(stack, key, runs, 2.0, 8, time.monotonic() + 300))
    with httpx.Client(base_url=stack.gateway_url, timeout=60) as http:
        http.get("/v1/admin/keys", headers=admin).raise_for_status()
        for mode in ("hybrid", "keyword"):
            http.post("/v1/search", json={"query": "invoice", "mode": mode}, headers=user).raise_for_status()
        # A run cancelled while it runs: its id from the stream's headers, then DELETE.
        with http.stream("POST", "/v1/search", json={"query": "Who signed the contract?", "mode": "agentic"},
                         headers={**user, "Accept": "text/event-stream"}) as resp:
            run_id = resp.headers.get("X-Run-Id")
            if run_id:
                http.delete(f"/v1/runs/{run_id}", headers=user)


def observe(runs: int) -> tuple[int, list[dict[str, Any]]]:
    """Run the stack and its workload under MONITOR: the commands watched, and the
    transaction and multi-key shapes (:func:`audit`)."""
    from rich.console import Console

    from pmsearch.cli.demo import load_demo

    with tempfile.TemporaryDirectory() as tmp, scripted_model(0.05, Path(tmp) / "model", search_round=True) as model:
        stack = Stack(Path(tmp) / "stack", extra_env={
            "PM_MODEL_BASE_URL": model.base_url, "PM_MODEL_OUTPUT": "json_schema", "PM_AGENT_MODEL": "scripted",
            "PM_SEARCH_RATE_PER_MINUTE": "0",
        })
        try:
            stack.start()
            watch = Watch(stack)
            watch.start()
            watch.ready.wait(10)
            users: dict[str, str] = {}
            polling = threading.Event()

            def poll() -> None:  # connections come and go: note each one's user while it lasts
                while not polling.is_set():
                    users.update(users_by_address(stack))
                    polling.wait(0.2)

            poller = threading.Thread(target=poll, daemon=True)
            poller.start()
            keys = load_demo(stack, DEMO, Console(quiet=True))
            workload(stack, keys["acme/alice"], runs)
            polling.set()
            poller.join(5)
            watch.end()
            return len(watch.lines), audit(watch.lines, stack.redis_client(), users)
        finally:
            stack.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=6)
    args = parser.parse_args()
    watched, rows = observe(args.runs)
    cross = [r for r in rows if r["slots"] > 1]
    print(f"slots: {watched} commands watched; {len(rows)} transaction or multi-key shapes, "
          f"{len(cross)} of them on more than one hash slot (a Redis Cluster refuses those)")
    print(format_table([{**r, "keys": r["keys"][:110]} for r in rows]))
    by_user = defaultdict(int)
    for r in cross:
        by_user[r["user"]] += 1
    emit_json({"bench": "slots", "commands": watched, "shapes": len(rows), "cross_slot": len(cross),
               "cross_slot_by_user": dict(by_user), "cross_slot_shapes": cross})


if __name__ == "__main__":
    main()
