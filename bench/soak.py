"""Fault soak: agentic runs while stage processes are killed; every run must end once.

Starts its own stack on free loopback ports (scripted model at a fixed latency, demo
mailbox; each run a search round and three model calls), starts ``--runs`` agentic
runs at ``--rate`` a second (half over SSE, half waiting for the JSON result, at most
``--concurrency`` in flight) while a chaos loop SIGKILLs a random stage process
(planner, searcher, answerer, verifier or the gateway) every ``--kill-every``. The
stack's supervisor (pmsearch/cli/supervisor.py, as in `pmsearch up`) starts each one again.
With ``--restart-redis-every`` it also stops Redis (``SIGTERM``, a shutdown that writes
the append-only file; ``--redis-signal kill`` for a crash, which may lose the last
second of writes under ``appendfsync everysec``) and the supervisor starts it again on
the same port and directory, where the AOF brings the queues, groups and runs back.
With ``--kill-redis-primary-every`` the stack runs Redis Sentinel instead (a primary, a
replica and three sentinels; docs/scale.md) and the primary the sentinels name is
SIGKILLed that often: the replica is promoted, the services follow it, and the
supervisor starts the old primary again as the new one's replica. Each failover's time
(the kill until the sentinels name a new primary that says it is one) is reported.

Clients behave as a careful client would: each start carries an ``Idempotency-Key``;
``503``/``429`` (and ``409`` while a first request with the key is still starting) are
retried after their ``Retry-After``; an SSE stream cut by a gateway kill resumes at
``GET /v1/runs/{id}/events`` with ``Last-Event-ID``; a request cut before the client
learned its run id (a waiting request, or a stream before its headers) is sent again
with the same key, and follows the run the first one started. A run no client followed
(recorded by a gateway killed before it published the run, which the watchdog ends) is
counted as ended, unread.

Afterwards every run in Redis (those of cut requests included) is audited:

* lost: a run with no stored result, or a client that got no ``done`` (SSE) / result
  (waiting) for the run it followed;
* duplicated: a client relayed ``done`` (or a result) more than once, a relayed result
  that differs from the stored one, or (where the stack still writes ``pm:results``)
  more than one ``RunFinished`` for a run. A run's ``done`` *progress entry* written
  twice (a verifier killed between publishing and marking) is reported apart: the
  gateway only wakes up on it and relays the stored result once.

Goal: 0 lost, 0 duplicated. Bounded: at most ``--runs`` runs (plus resends of cut
requests), chaos stops after ``--max-seconds``.

    python -m bench.soak [--runs 200] [--kill-every 5s] [--rate 1] [--seed 1] [--restart-redis-every 20s]
                         [--kill-redis-primary-every 20s]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from bench._harness import QUESTIONS, demo_stack, scripted_model
from bench._soak_client import Client, run_client
from bench._util import emit_json, format_table, latency_ms
from pmsearch.cli.stack import Stack
from pmsearch.cli.supervisor import Supervisor
from pmsearch.shared import streams
from pmsearch.shared.bus import DATA_FIELD
from pmsearch.shared.messages import RunResult
from pmsearch.shared.runstore import RunReader

VICTIMS = ("planner", "searcher", "answerer", "verifier", "gateway")


def seconds(text: str) -> float:
    """``5s``, ``500ms``, ``2m`` or a bare number of seconds."""
    text = text.strip().lower()
    for suffix, factor in (("ms", 0.001), ("s", 1.0), ("m", 60.0)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text)


class Chaos(threading.Thread):
    """Supervises the stack (restarts the dead, as `pmsearch up` does) and, until told
    to stop, SIGKILLs one random live stage every ``every`` seconds."""

    def __init__(
        self, stack: Stack, every: float, seed: int, max_kills: int,
        redis_every: float | None = None, redis_signal: signal.Signals = signal.SIGTERM,
        primary_every: float | None = None,
    ) -> None:
        super().__init__(daemon=True)
        self.primary_every = primary_every
        self.failovers: list[float] = []  # seconds from a primary's kill to its successor
        self.failed_over: list[threading.Thread] = []
        self.stack = stack
        self.every = every
        self.redis_every = redis_every
        self.redis_signal = redis_signal
        self.redis_stops = 0
        self.rng = random.Random(seed)
        self.max_kills = max_kills
        self.kills: Counter[str] = Counter()
        self.restarts: Counter[str] = Counter()
        self.log: list[str] = []
        self.stop_killing = threading.Event()
        self.stop_supervising = threading.Event()
        # Kills are deliberate here: a short backoff, so the soak measures recovery, not
        # the crash-loop delay (up to 60 s) that protects a stage that cannot start.
        self.supervisor = Supervisor(stack, report=self._report, first_delay=0.5, max_delay=2.0, stable_after=5.0)

    def _report(self, text: str) -> None:
        self.log.append(time.strftime("%H:%M:%S ") + text)
        name = text.split(" ", 1)[0]
        if " restarted " in text:
            self.restarts[name] += 1

    def all_up(self) -> bool:
        return not self.supervisor._due and all(p.poll() is None for p in self.stack.procs.values())

    def run(self) -> None:
        next_kill = time.monotonic() + self.every
        next_redis = time.monotonic() + (self.redis_every or 0)
        next_primary = time.monotonic() + (self.primary_every or 0)
        while not self.stop_supervising.is_set():
            self.supervisor.check()
            now = time.monotonic()
            if self.primary_every and not self.stop_killing.is_set() and now >= next_primary and self._kill_primary():
                next_primary = now + self.primary_every
            if self.redis_every and not self.stop_killing.is_set() and now >= next_redis:
                next_redis = now + self.redis_every
                self._stop_redis()
            if not self.stop_killing.is_set() and now >= next_kill and sum(self.kills.values()) < self.max_kills:
                next_kill = now + self.every
                alive = [n for n in VICTIMS if self.stack.procs[n].poll() is None and n not in self.supervisor._due]
                if alive:
                    victim = self.rng.choice(alive)
                    try:
                        os.kill(self.stack.procs[victim].pid, signal.SIGKILL)
                        self.kills[victim] += 1
                    except ProcessLookupError:
                        pass  # died on its own meanwhile; the supervisor sees it
            time.sleep(0.05)

    def _kill_primary(self) -> bool:
        """SIGKILL the primary the sentinels name, once the last failover is over and the
        set could survive another (FailoverSet.ready_to_fail_over); a thread times how
        long until they name the next one. False when it is not time yet."""
        failover = self.stack.failover
        if failover is None or any(t.is_alive() for t in self.failed_over):
            return False
        port = failover.primary_port()
        name = f"redis-{failover.data_ports.index(port)}" if port in failover.data_ports else None
        if name is None or self.stack.procs[name].poll() is not None or name in self.supervisor._due:
            return False
        if not failover.ready_to_fail_over(port):
            return False
        killed_at = time.monotonic()
        try:
            os.kill(self.stack.procs[name].pid, signal.SIGKILL)
        except ProcessLookupError:
            return False
        self.kills["redis primary"] += 1

        def timed() -> None:
            failover.wait_for_primary(port, timeout=60)
            self.failovers.append(time.monotonic() - killed_at)

        thread = threading.Thread(target=timed, daemon=True)
        thread.start()
        self.failed_over.append(thread)
        return True

    def _stop_redis(self) -> None:
        """Stop Redis (the supervisor starts it again, from its AOF), unless it is down already."""
        proc = self.stack.procs["redis"]
        if proc.poll() is not None or "redis" in self.supervisor._due:
            return
        try:
            os.kill(proc.pid, self.redis_signal)
            self.redis_stops += 1
        except ProcessLookupError:
            pass


async def drive(stack: Stack, key: str, runs: int, rate: float, concurrency: int, give_up: float) -> list[Client]:
    """Start a run every 1/``rate`` seconds (at most ``concurrency`` in flight), so the
    runs span many kills rather than finishing between two."""
    sem = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency * 2 + 10)
    timeout = httpx.Timeout(120, connect=5)
    clients = [Client(i, "sse" if i % 2 == 0 else "wait", QUESTIONS[i % len(QUESTIONS)]) for i in range(runs)]
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=timeout, limits=limits) as http:

        async def one(client: Client) -> None:
            await asyncio.sleep(client.index / rate)
            async with sem:
                await run_client(http, key, client, give_up)

        await asyncio.gather(*(one(c) for c in clients))
    return clients


def _run_finished(admin: Any) -> tuple[Counter[str], dict[str, set[str]]]:
    """``RunFinished`` notices per run on ``pm:results``, where the stack still has that
    stream (read as plain JSON: the contract may be gone with the stream)."""
    finishes: Counter[str] = Counter()
    results: dict[str, set[str]] = {}
    stream = getattr(streams, "RESULTS", None)
    for _, fields in admin.xrange(stream) if stream else []:
        data = json.loads(json.loads(fields[DATA_FIELD.encode()])["data"])
        finishes[data["run_id"]] += 1
        results.setdefault(data["run_id"], set()).add(RunResult.model_validate(data["result"]).model_dump_json())
    return finishes, results


def audit_store(stack: Stack, settle_seconds: float) -> dict[str, dict[str, Any]]:
    """Every run in Redis: its stored result, its RunFinished count and its progress
    ``done`` entries; waits up to ``settle_seconds`` for runs still open to end."""
    admin = stack.redis_client()
    try:
        reader = RunReader(admin)
        run_ids = reader.run_ids()
        deadline = time.monotonic() + settle_seconds
        while time.monotonic() < deadline and not all(reader.finished(r) for r in run_ids):
            time.sleep(0.5)
        finishes, finished_results = _run_finished(admin)
        out: dict[str, dict[str, Any]] = {}
        for run_id in run_ids:
            dones = sum(getattr(e, "event", None) == "done" for e in reader.progress(run_id))
            result = reader.result(run_id)
            out[run_id] = {
                "result": result,
                "finished": finishes[run_id],
                "finish_differs": result is not None
                and bool(finished_results.get(run_id, set()) - {result.model_dump_json()}),
                "progress_done": dones,
            }
        return out
    finally:
        admin.close()


def verdict(clients: list[Client], store: dict[str, dict[str, Any]]) -> dict[str, Any]:
    followed = {c.run_id: c for c in clients if c.run_id}
    lost = {
        "no_stored_result": sorted(r for r, s in store.items() if s["result"] is None),
        "client_without_done": sorted(str(c.index) for c in clients if c.relayed_done == 0),
    }
    dup = {
        "run_finished_repeated": sorted(r for r, s in store.items() if s["finished"] > 1),
        "run_finished_differs": sorted(r for r, s in store.items() if s["finish_differs"]),
        "client_done_repeated": sorted(str(c.index) for c in clients if c.relayed_done > 1),
        "client_result_differs": sorted(
            r for r, c in followed.items()
            if c.result is not None and store.get(r, {}).get("result") is not None
            and RunResult.model_validate(c.result) != store[r]["result"]
        ),
        "followed_run_not_in_store": sorted(r for r in followed if r not in store),
    }
    # The verifier may write a run's `done` progress entry twice (killed between publishing
    # and marking it published); the gateway only wakes up on it and relays the stored
    # result once, so it is reported, not counted as a duplicate.
    repeated_notices = sorted(r for r, s in store.items() if s["progress_done"] > 1)
    differing = {r: _differing_fields(followed[r].result, store[r]["result"]) for r in dup["client_result_differs"]}
    lost_runs = set(lost["no_stored_result"]) | {f"client {i}" for i in lost["client_without_done"]}
    dup_runs = set().union(*(set(v) for v in dup.values()))
    return {
        "lost": len(lost_runs), "duplicated": len(dup_runs), "lost_detail": lost, "duplicated_detail": dup,
        "repeated_done_entries": repeated_notices, "differing_fields": differing,
    }


def _differing_fields(relayed: dict[str, Any], stored: RunResult) -> dict[str, list[Any]]:
    """Which of a result's top-level fields the client saw otherwise than the store
    holds, with both values: what tells a re-made run from a relayed one."""
    theirs, ours = RunResult.model_validate(relayed).model_dump(mode="json"), stored.model_dump(mode="json")
    return {k: [theirs.get(k), ours.get(k)] for k in sorted(set(theirs) | set(ours)) if theirs.get(k) != ours.get(k)}


def _p50(values: list[float]) -> float:
    return latency_ms(values)["p50_ms"] / 1000 if values else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--kill-every", default="5s", help="time between kills, e.g. 5s or 500ms")
    parser.add_argument("--rate", type=float, default=1.0, help="runs started per second")
    parser.add_argument("--concurrency", type=int, default=16, help="at most this many runs in flight")
    parser.add_argument("--latency", type=float, default=0.2, help="scripted model seconds per call (3 calls a run)")
    parser.add_argument("--budget", type=float, default=20.0, help="the tenant's seconds per run")
    parser.add_argument("--max-seconds", type=float, default=600.0, help="stop killing and sending after this")
    parser.add_argument("--max-kills", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--restart-redis-every", help="also stop Redis this often (e.g. 20s); the supervisor restarts it")
    parser.add_argument("--redis-signal", choices=("term", "kill"), default="term",
                        help="term: a shutdown (AOF written); kill: a crash (the last second may be lost)")
    parser.add_argument("--kill-redis-primary-every",
                        help="run Redis Sentinel and SIGKILL the primary this often (e.g. 20s); it fails over")
    parser.add_argument("--keep", type=Path, help="keep the stack's folder (logs) here instead of a temporary one")
    args = parser.parse_args()
    every = seconds(args.kill_every)
    redis_every = seconds(args.restart_redis_every) if args.restart_redis_every else None
    redis_signal = signal.SIGTERM if args.redis_signal == "term" else signal.SIGKILL
    primary_every = seconds(args.kill_redis_primary_every) if args.kill_redis_primary_every else None

    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        env = {
            "PM_SEARCH_RATE_PER_MINUTE": "0",  # one key drives every run: not its limits
            "PM_MAX_STREAMS_PER_KEY": "10000",
            "PM_TENANT_SHARE": "1.0",
            "PM_MODEL_TIMEOUT_SECONDS": "10",
        }
        tenant = {"search.agentic_daily_cap": 1_000_000, "search.agentic_max_seconds": args.budget, "search.agentic_max_steps": 6}
        with (
            scripted_model(args.latency, work / "model", search_round=True) as model,
            demo_stack(work, model.base_url, env, tenant, sentinel=primary_every is not None) as (stack, key),
        ):
            chaos = Chaos(stack, every, args.seed, args.max_kills, redis_every, redis_signal, primary_every)
            started = time.monotonic()
            chaos.start()
            try:
                clients = asyncio.run(drive(stack, key, args.runs, args.rate, args.concurrency, started + args.max_seconds))
                chaos.stop_killing.set()
                sent_for = time.monotonic() - started
                back = time.monotonic() + 120
                while not chaos.all_up() and time.monotonic() < back:
                    time.sleep(0.2)
                store = audit_store(stack, settle_seconds=args.budget + 30)
            finally:
                chaos.stop_supervising.set()
                chaos.join()  # before the stack stops: the supervisor must not restart what stop() ends
                for thread in chaos.failed_over:
                    thread.join(60)
            log_dir = stack.log_dir

    v = verdict(clients, store)
    walls = [c.wall for c in clients if c.wall is not None]
    outcomes = Counter(s["result"].outcome for s in store.values() if s["result"] is not None)
    cut = sum(c.cut_off for c in clients)
    unread = len(store) - len({c.run_id for c in clients if c.run_id})
    rows = [
        {"": "runs (clients)", "value": args.runs},
        {"": "runs in the store", "value": len(store)},
        {"": "kills", "value": sum(chaos.kills.values())},
        *({"": f"  {n}", "value": f"{chaos.kills[n]} killed, {chaos.restarts[n]} restarted"} for n in VICTIMS),
        {"": f"redis stopped ({args.redis_signal}) / restarted from AOF", "value": f"{chaos.redis_stops} / {chaos.restarts['redis']}"},
        *([{"": "redis primary killed / failed over", "value": f"{chaos.kills['redis primary']} / {len(chaos.failovers)}"},
           {"": "  failover p50 / max", "value": f"{_p50(chaos.failovers):.1f} / {max(chaos.failovers, default=0):.1f} s"}]
          if primary_every else []),
        {"": "SSE streams resumed (Last-Event-ID)", "value": sum(c.resumes for c in clients)},
        {"": "requests cut before the run id was known (sent again)", "value": cut},
        {"": "  runs they had started: ended, unread", "value": unread},
        {"": "refused 503 / 429 / 409 (retried)",
         "value": " / ".join(str(sum(c.refused[code] for c in clients)) for code in (503, 429, 409))},
        {"": "other 5xx", "value": sum(len(c.server_errors) for c in clients)},
        {"": "repeated done entries (not relayed)", "value": len(v["repeated_done_entries"])},
        {"": "lost", "value": v["lost"]},
        {"": "duplicated", "value": v["duplicated"]},
        *({"": f"outcome {o}", "value": n} for o, n in sorted(outcomes.items())),
        {"": "wall p50 / p95 ms", "value": "{p50_ms:.0f} / {p95_ms:.0f}".format(**latency_ms(walls))},
    ]
    print(f"soak: {args.runs} runs, {args.rate:g} a second, at most {args.concurrency} in flight, a kill every {every:g} s, "
          f"model {args.latency:g} s per call, budget {args.budget:g} s; {sent_for:.0f} s of traffic"
          + (f"; Redis stopped ({args.redis_signal}) every {redis_every:g} s" if redis_every else "")
          + (f"; the Redis primary SIGKILLed every {primary_every:g} s (Sentinel)" if primary_every else ""))
    print(format_table(rows))
    if v["lost"] or v["duplicated"]:
        print("lost:", json.dumps(v["lost_detail"]), "\nduplicated:", json.dumps(v["duplicated_detail"]))
        for run_id, fields in v["differing_fields"].items():
            print(f"run {run_id}: the client saw otherwise than the store holds:", json.dumps(fields)[:2000])
        if args.keep:
            print(f"logs in {log_dir}")
    emit_json({
        "bench": "soak", "runs": args.runs, "runs_in_store": len(store), "concurrency": args.concurrency, "rate_per_s": args.rate,
        "kill_every_s": every, "kills": dict(chaos.kills), "restarts": dict(chaos.restarts),
        "redis_restart_every_s": redis_every, "redis_signal": args.redis_signal if redis_every else None,
        "redis_stops": chaos.redis_stops,
        "redis_primary_kill_every_s": primary_every, "redis_primary_kills": chaos.kills["redis primary"],
        "failover_s": sorted(round(t, 2) for t in chaos.failovers),
        "resumed_streams": sum(c.resumes for c in clients), "cut_requests": cut, "runs_ended_unread": unread,
        "refused": {str(code): sum(c.refused[code] for c in clients) for code in (503, 429, 409)},
        "other_5xx": sum(len(c.server_errors) for c in clients),
        "outcomes": dict(outcomes), "wall": latency_ms(walls), "traffic_s": round(sent_for, 1),
        "lost": v["lost"], "duplicated": v["duplicated"], "goal_met": v["lost"] == 0 and v["duplicated"] == 0,
        "lost_detail": v["lost_detail"], "duplicated_detail": v["duplicated_detail"],
        "repeated_done_entries": v["repeated_done_entries"],
    })
    if v["lost"] or v["duplicated"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
