"""Load: N concurrent agentic clients against the whole stack, per level.

Starts its own stack on free loopback ports with the scripted model at a fixed latency
(``--latency``, one call a run with the honest brain), the demo mailbox, and the limits
that are not the service's own raised: tenant acme's daily cap, the per-key stream
limit and search rate, and the per-process model-call limit (a real model endpoint
needs it; the scripted one does not, and its queue would be measured as overhead).
The gateway's own admission limits (``PM_MAX_WAITING_RUNS``, ``PM_MAX_EVENT_STREAMS``)
stay at their defaults: past them a client must get ``503`` with ``Retry-After``.

Per level, N clients (half over SSE, half waiting for the JSON result) each run
``max(2, 200 / N)`` runs back to back, all starting at once; a refused request is sent
again after its ``Retry-After``. The runs ask alice's labelled demo questions
(evals/demo.yaml, 73 of them) in turn, not one question over and over: the searcher
keeps the embeddings of recent query texts (``PM_QUERY_EMBEDDING_CACHE_SIZE``), and a
load of one repeated text would measure only that cache. Its hits and misses are
reported per level; ``--query-cache-size 0`` measures without it. Reported per level: requests, 5xx (other than a ``503``
with ``Retry-After``; must be 0), ``503``/``429`` with ``Retry-After``, broken streams,
service overhead p50/p95 (wall minus the model's latency times the run's model calls,
for the admitted request), first ``evidence`` event p95 (SSE clients), throughput, and
the benchmark client's own event-loop lag (it shares the two cores with the stack).
Baseline in the same run: one client, one run at a time.

Goals: overhead p95 <= 100 ms at 10 clients and <= 250 ms at 50; first evidence p95
<= 300 ms at 50.

Also per level, what its measured CPU allows here (Little's law, ``cpu_bound``): the CPU
every process spent a run (stack, model, this client) caps the runs a second the cores
can finish, which sets the least mean overhead that many clients can see, and the cores
at which the goal's overhead could be the mean. When the floor is near the measured
overhead, the level is CPU-bound: only less CPU a run, or more cores, moves it. The floor
assumes every client keeps a run in flight throughout; a level whose clients make two
runs each (100 and more) spends part of its time starting and ending, and one that
refuses requests (``503``) has fewer runs in flight, so there it overstates. "CPU busy" is
the share of the cores the level's runs used (runs a second times CPU a run).

    python -m bench.load [--levels 10,50,100,200,500] [--latency 0.2] [--query-cache-size N]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench._harness import cpu_seconds, demo_stack, eval_questions, retry_after, scrape, scripted_model, sse_events
from bench._util import emit_json, format_table, latency_ms, percentile

GOALS = {10: {"overhead_p95_ms": 100}, 50: {"overhead_p95_ms": 250, "first_evidence_p95_ms": 300}}
BASELINE_RUNS = 20
CORES = len(os.sched_getaffinity(0))


@dataclass
class Level:
    clients: int
    requests: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    with_retry_after: Counter[int] = field(default_factory=Counter)
    errors_5xx: int = 0  # 5xx other than a 503 that says when to retry
    broken: list[str] = field(default_factory=list)  # transport errors, streams without done
    walls: list[float] = field(default_factory=list)
    overheads: list[float] = field(default_factory=list)
    first_evidence: list[float] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    loop_lag: list[float] = field(default_factory=list)
    seconds: float = 0.0
    cpu_ms_per_run: dict[str, float] = field(default_factory=dict)  # by process
    query_cache: dict[str, int] | None = None  # the searcher's query-embedding cache: hits, misses
    redis_calls_per_run: dict[str, float] = field(default_factory=dict)  # by command, most first


async def one_run(http: httpx.AsyncClient, key: str, question: str, streamed: bool, latency: float, lv: Level) -> bool:
    """One request; True when it finished a run (False: refused, to be sent again)."""
    headers = {"Authorization": f"Bearer {key}"}
    body = {"query": question, "mode": "agentic"}
    started = time.perf_counter()
    lv.requests += 1
    try:
        if streamed:
            headers["Accept"] = "text/event-stream"
            async with http.stream("POST", "/v1/search", json=body, headers=headers) as resp:
                if not _admitted(resp, lv):
                    await resp.aread()
                    await asyncio.sleep(retry_after(resp) or 1.0)
                    return False
                evidence_at, result = None, None
                async for ev in sse_events(resp):
                    if ev.event == "evidence" and evidence_at is None:
                        evidence_at = time.perf_counter() - started
                    elif ev.event == "done":
                        result = json.loads(ev.data)
                if result is None:
                    lv.broken.append("stream ended without done")
                    return True
                if evidence_at is not None:
                    lv.first_evidence.append(evidence_at)
        else:
            resp = await http.post("/v1/search", json=body, headers=headers)
            if not _admitted(resp, lv):
                await asyncio.sleep(retry_after(resp) or 1.0)
                return False
            result = resp.json()
    except httpx.TransportError as exc:
        lv.broken.append(type(exc).__name__)
        return True
    wall = time.perf_counter() - started
    lv.walls.append(wall)
    lv.overheads.append(wall - result["usage"]["model_calls"] * latency)
    lv.outcomes[result["outcome"]] += 1
    return True


def _admitted(resp: httpx.Response, lv: Level) -> bool:
    lv.statuses[resp.status_code] += 1
    if resp.status_code == 200:
        return True
    if retry_after(resp) is not None:
        lv.with_retry_after[resp.status_code] += 1
    if resp.status_code >= 500 and not (resp.status_code == 503 and retry_after(resp) is not None):
        lv.errors_5xx += 1
    return False


async def _lag(lv: Level, stop: asyncio.Event) -> None:
    """How late this process's event loop wakes: if the client itself is starved, its
    timings are not the service's."""
    while not stop.is_set():
        t = time.perf_counter()
        await asyncio.sleep(0.05)
        lv.loop_lag.append(time.perf_counter() - t - 0.05)


async def level(
    url: str, key: str, questions: list[str], clients: int, runs_each: int, latency: float, streamed_only: bool = False
) -> Level:
    lv = Level(clients)
    # Idle connections are dropped before uvicorn's 5 s keep-alive ends them, or a request
    # sent on one as the server closes it fails (a client race, not the service's).
    limits = httpx.Limits(max_connections=clients + 10, max_keepalive_connections=clients + 10, keepalive_expiry=2.0)
    stop = asyncio.Event()
    async with httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(180, connect=30), limits=limits) as http:

        async def client(i: int) -> None:
            streamed = streamed_only or i % 2 == 0
            done = 0
            while done < runs_each:
                question = questions[(i * runs_each + done) % len(questions)]
                if await one_run(http, key, question, streamed, latency, lv):
                    done += 1

        lagger = asyncio.create_task(_lag(lv, stop))
        started = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(clients)))
        lv.seconds = time.perf_counter() - started
        stop.set()
        await lagger
    return lv


def measured(pids: dict[str, int], work: Any, searcher_port: int | None = None, redis: Any = None) -> Level:
    """Run ``work`` (a coroutine giving a level's figures) and record each process's CPU per run:
    where the time of a saturated stack goes; the Redis commands a run costs (each is a
    round trip and a system call on both sides); and the searcher's query-cache hits."""
    cache_before = _cache_counts(searcher_port)
    calls_before = _redis_calls(redis)
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    own = os.times()
    lv = asyncio.run(work)
    after = os.times()
    cache_after = _cache_counts(searcher_port)
    if cache_before is not None and cache_after is not None:
        lv.query_cache = {k: cache_after[k] - cache_before[k] for k in cache_after}
    runs = max(len(lv.walls), 1)
    lv.cpu_ms_per_run = {n: round((cpu_seconds(p) - before[n]) * 1000 / runs, 1) for n, p in pids.items()}
    lv.cpu_ms_per_run["client"] = round((after.user + after.system - own.user - own.system) * 1000 / runs, 1)
    calls_after = _redis_calls(redis)
    per_run = {c: (n - calls_before.get(c, 0)) / runs for c, n in calls_after.items()}
    lv.redis_calls_per_run = {c: round(n, 1) for c, n in sorted(per_run.items(), key=lambda t: -t[1]) if n >= 0.05}
    return lv


def _redis_calls(redis: Any) -> dict[str, int]:
    """Calls so far by command (``INFO commandstats``); empty without a client."""
    if redis is None:
        return {}
    if not hasattr(redis, "get_primaries"):
        stats = redis.info("commandstats")
        return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}
    calls: dict[str, int] = {}  # a cluster: every primary's, summed
    for node in redis.info("commandstats", target_nodes="primaries").values():
        for name, v in node.items():
            calls[name.removeprefix("cmdstat_")] = calls.get(name.removeprefix("cmdstat_"), 0) + int(v["calls"])
    return calls


def _cache_counts(port: int | None) -> dict[str, int] | None:
    """The searcher's query-embedding cache counters; None where it has none."""
    if port is None:
        return None
    metrics = scrape(port)
    name = "pm_searcher_query_embedding_cache_total"
    if f'{name}{{result="hit"}}' not in metrics:
        return None
    return {r: int(metrics[f'{name}{{result="{r}"}}']) for r in ("hit", "miss")}


def _cache_text(lv: Level) -> str:
    if lv.query_cache is None:
        return "n/a"
    hits, total = lv.query_cache["hit"], lv.query_cache["hit"] + lv.query_cache["miss"]
    return f"{hits}/{total}"


@dataclass(frozen=True)
class CpuBound:
    """What a level's measured CPU allows on this machine, by Little's law: n clients
    that each wait for their run keep n runs in flight, so runs finish at n / wall a
    second; all processes together (stack, model, client) can finish at most
    ``cores * 1000 / cpu_ms`` a second. However the work is scheduled, the mean wall
    is then at least ``n * cpu_ms / (cores * 1000)``, and the mean overhead that less
    the model's time. A p95 sits above the mean."""

    cpu_ms_per_run: float  # every process on the machine that the runs cost
    runs_per_s_max: float
    overhead_floor_ms: float  # the least mean overhead these clients can see here
    cores_for_ms: dict[int, float]  # overhead (ms) -> cores at which the mean could be that


def cpu_bound(clients: int, cpu_ms_per_run: float, model_s_per_run: float, cores: int,
              overheads_ms: tuple[int, ...] = ()) -> CpuBound:
    runs_per_s_max = cores * 1000 / cpu_ms_per_run if cpu_ms_per_run else math.inf
    floor_ms = max(0.0, clients / runs_per_s_max - model_s_per_run) * 1000
    cores_for = {
        o: round(clients * cpu_ms_per_run / ((o / 1000 + model_s_per_run) * 1000), 1) for o in overheads_ms
    }
    return CpuBound(round(cpu_ms_per_run, 1), round(runs_per_s_max, 1), round(floor_ms, 1), cores_for)


def _cpu_bound(lv: Level) -> CpuBound:
    model_s = statistics.fmean(w - o for w, o in zip(lv.walls, lv.overheads)) if lv.walls else 0.0
    goal = GOALS.get(lv.clients, {}).get("overhead_p95_ms")
    return cpu_bound(lv.clients, sum(lv.cpu_ms_per_run.values()), model_s, CORES, (goal,) if goal else ())


def _bound_row(lv: Level) -> dict[str, Any]:
    bound = _cpu_bound(lv)
    cores = ", ".join(f"{c:g} for {o} ms" for o, c in bound.cores_for_ms.items()) or "-"
    busy = len(lv.walls) / lv.seconds * bound.cpu_ms_per_run / (CORES * 10) if lv.seconds else math.nan
    return {"CPU ms a run, all": bound.cpu_ms_per_run, "runs/s at most": bound.runs_per_s_max,
            "CPU busy %": round(busy),
            "overhead floor ms": bound.overhead_floor_ms, "measured p50 ms": latency_ms(lv.overheads)["p50_ms"],
            "cores the goal's mean needs": cores}


def row(lv: Level, label: str) -> dict[str, Any]:
    over, fe = latency_ms(lv.overheads), latency_ms(lv.first_evidence)
    return {
        "clients": label,
        "requests": lv.requests,
        "runs": len(lv.walls),
        "5xx": lv.errors_5xx,
        "503 (R-A)": f"{lv.statuses[503]} ({lv.with_retry_after[503]})",
        "429 (R-A)": f"{lv.statuses[429]} ({lv.with_retry_after[429]})",
        "broken": len(lv.broken),
        "overhead p50 ms": over["p50_ms"],
        "overhead p95 ms": over["p95_ms"],
        "1st evidence p95 ms": fe["p95_ms"],
        "runs/s": round(len(lv.walls) / lv.seconds, 1) if lv.seconds else math.nan,
        "client lag p95 ms": round(percentile([x * 1000 for x in lv.loop_lag], 95), 1),
        "query cache hits": _cache_text(lv),
    }


def summary(lv: Level) -> dict[str, Any]:
    return {
        "clients": lv.clients, "requests": lv.requests, "runs": len(lv.walls), "seconds": round(lv.seconds, 1),
        "statuses": {str(k): v for k, v in sorted(lv.statuses.items())},
        "with_retry_after": {str(k): v for k, v in sorted(lv.with_retry_after.items())},
        "errors_5xx": lv.errors_5xx, "broken": len(lv.broken), "broken_kinds": dict(Counter(lv.broken)),
        "overhead": latency_ms(lv.overheads), "wall": latency_ms(lv.walls),
        "first_evidence": latency_ms(lv.first_evidence), "outcomes": dict(lv.outcomes),
        "client_loop_lag_p95_ms": round(percentile([x * 1000 for x in lv.loop_lag], 95), 1),
        "cpu_ms_per_run": lv.cpu_ms_per_run, "cpu_bound": dataclasses.asdict(_cpu_bound(lv)), "query_cache": lv.query_cache,
        "redis_calls_per_run": lv.redis_calls_per_run,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="10,50,100,200,500")
    parser.add_argument("--latency", type=float, default=0.2, help="scripted model seconds per call")
    parser.add_argument("--min-runs", type=int, default=200, help="runs per level at least (clients x runs each)")
    parser.add_argument("--model-concurrency", type=int, default=1024, help="PM_MODEL_MAX_CONCURRENCY for the run")
    parser.add_argument(
        "--query-cache-size", type=int, help="PM_QUERY_EMBEDDING_CACHE_SIZE for the searcher (default: the stack's; 0: none)"
    )
    parser.add_argument("--redis-cluster", action="store_true", help="three Redis Cluster primaries instead of one Redis")
    parser.add_argument("--stream-partitions", type=int, default=1, help="PM_STREAM_PARTITIONS for the stack")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    env = {
        "PM_STREAM_PARTITIONS": str(args.stream_partitions),
        "PM_SEARCH_RATE_PER_MINUTE": "0",
        "PM_MAX_STREAMS_PER_KEY": "100000",
        "PM_TENANT_SHARE": "1.0",  # one tenant drives the load: the replica's capacity, not its share
        "PM_MODEL_MAX_CONCURRENCY": str(args.model_concurrency),
        "PM_MODEL_TIMEOUT_SECONDS": "60",
    }
    if args.query_cache_size is not None:
        env["PM_QUERY_EMBEDDING_CACHE_SIZE"] = str(args.query_cache_size)
    questions = eval_questions()
    tenant = {"search.agentic_daily_cap": 10_000_000, "search.agentic_max_seconds": 90, "search.agentic_max_steps": 6}
    results: dict[int, Level] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with scripted_model(args.latency, work / "model") as model, demo_stack(
            work, model.base_url, env, tenant, cluster=args.redis_cluster
        ) as (stack, key):
            pids = {name: p.pid for name, p in stack.procs.items()} | {"model": model.pid}
            url, port = stack.gateway_url, stack.metrics_ports.get("searcher")
            redis = stack.redis_client()
            asyncio.run(level(url, key, questions, 2, 2, args.latency))  # warm every stage up
            baseline = measured(pids, level(url, key, questions, 1, BASELINE_RUNS, args.latency, streamed_only=True), port, redis)
            for n in levels:
                runs_each = max(2, math.ceil(args.min_runs / n))
                results[n] = measured(pids, level(url, key, questions, n, runs_each, args.latency), port, redis)

    print(f"scripted model: {args.latency:g} s per call; overhead = wall - calls x latency; R-A = with Retry-After")
    print(f"questions: {len(questions)} demo questions in turn; query cache hits = query embeddings the searcher "
          f"served from its cache of recent texts (a repeated question), of all it embedded")
    print(format_table([row(baseline, "1 (baseline)")] + [row(results[n], str(n)) for n in levels]))
    goals: dict[str, Any] = {}
    for n, wanted in GOALS.items():
        if n in results:
            got = {"overhead_p95_ms": latency_ms(results[n].overheads)["p95_ms"],
                   "first_evidence_p95_ms": latency_ms(results[n].first_evidence)["p95_ms"]}
            goals[str(n)] = {k: {"goal": v, "measured": got[k], "met": got[k] <= v} for k, v in wanted.items()}
    no_5xx = all(lv.errors_5xx == 0 for lv in results.values())
    cpu = [{"clients": label, **lv.cpu_ms_per_run} for label, lv in [("1", baseline), *((str(n), results[n]) for n in levels)]]
    print("\nCPU ms per finished run, by process (2 cores: 1000 ms of CPU a second each):")
    print(format_table(cpu))
    print("\nRedis commands per finished run (the baseline's, by command; all levels in the JSON):")
    top = list(baseline.redis_calls_per_run.items())[:12]
    print(f"total {sum(baseline.redis_calls_per_run.values()):.0f}: " + ", ".join(f"{c} {n:g}" for c, n in top))
    print(f"\nWhat the measured CPU allows on {CORES} cores (Little's law; overhead floor = the least mean overhead):")
    print(format_table([{"clients": str(n), **_bound_row(results[n])} for n in levels]))
    print(f"goals: {json.dumps(goals)}; no 5xx: {no_5xx}")
    emit_json({
        "bench": "load", "redis": "cluster of 3" if args.redis_cluster else "one server",
        "stream_partitions": args.stream_partitions, "model_latency_s": args.latency, "model_concurrency": args.model_concurrency,
        "questions": len(questions), "query_cache_size": args.query_cache_size,
        "baseline": summary(baseline), "levels": {str(n): summary(lv) for n, lv in results.items()},
        "goals": goals, "no_5xx": no_5xx,
        "broken": sum(len(lv.broken) for lv in results.values()),
    })
    if not no_5xx or any(lv.broken for lv in results.values()):
        sys.exit(1)  # the latency goals depend on the machine; errors never do


if __name__ == "__main__":
    main()
