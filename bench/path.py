"""Where a lone agentic run's time goes, hop by hop, from the stream entries it left.

Starts its own stack (scripted model at ``--latency``, demo mailbox) and asks alice's
labelled demo questions one at a time over SSE. Every stream entry id is the Redis
server's clock in milliseconds, so a run's entries on ``pm:runs``, ``pm:tools``,
``pm:observations``, ``pm:answers`` and the drafts streams, with the client's own send and
``done`` times around them, say how long each stage held the run: the gateway (request
to ``pm:runs``), the planner (to its first search), the searcher (search and evidence
stored), the planner again (observation to ``pm:answers``, less the model's latency
times its calls), the answerer, and the verifier with the gateway relaying ``done``.
Runs are grouped by the hops they crossed; the most common path is tabled (p50 and
mean a hop, milliseconds).

Baseline in the same run: a plain hybrid search through the gateway (one HTTP request
and one searcher hop), p50; the JSON gives each hop's p50 and the run's overhead also as
a ratio of it, which holds on a machine whose speed drifts.

    python -m bench.path [--runs 40] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench._harness import demo_stack, eval_questions, scripted_model, sse_events
from bench._util import emit_json, format_table
from pmsearch.shared import streams
from pmsearch.shared.bus import DATA_FIELD

STAGE_STREAMS = (streams.RUNS, streams.TOOLS, streams.OBSERVATIONS, streams.ANSWERS, *streams.DRAFT_STREAMS)
# Who holds a run between two points of its path, by the stream entry that ends the hop.
HOLDER = {
    streams.RUNS: "gateway",
    streams.TOOLS: "planner",
    streams.OBSERVATIONS: "searcher",
    streams.ANSWERS: "planner",
    streams.DRAFTS_FROM_ANSWERER: "answerer",
    streams.DRAFTS_FROM_PLANNER: "planner",
    streams.DRAFTS_FROM_WATCHDOG: "gateway",
    "done": "verifier + relay",
}
TENANT = {"search.agentic_daily_cap": 10_000_000, "search.agentic_max_seconds": 90, "search.agentic_max_steps": 6}


@dataclass
class Run:
    sent_ms: float  # client clock, ms since the epoch
    done_ms: float
    run_id: str
    model_calls: int


def hops(run: Run, entries: list[tuple[int, str]], latency_ms: float) -> list[tuple[str, float]]:
    """(hop, ms) along the run's path: each stream entry (server ms, stream) in order,
    between the client's send and its ``done``; the hop that ends on ``pm:answers`` or
    ``pm:drafts:answerer`` less the model's latency for the calls made in it."""
    points = [(run.sent_ms, "sent")] + sorted(entries) + [(run.done_ms, "done")]
    calls_left = run.model_calls
    out = []
    for (start, _), (end, stream) in zip(points, points[1:]):
        took = end - start
        if stream in (streams.ANSWERS, streams.DRAFTS_FROM_ANSWERER) and calls_left:
            # The planner's decision (and completion) calls end on pm:answers; a draft the
            # answerer wrote itself ends on pm:drafts:answerer. Whole calls only: the rest is overhead.
            calls = min(calls_left, max(int(took // latency_ms), 0))
            took -= calls * latency_ms
            calls_left -= calls
        out.append((f"{HOLDER.get(stream, stream)} → {stream.removeprefix('pm:')}", took))
    return out


async def _ask(url: str, key: str, questions: list[str], runs: int) -> tuple[list[Run], list[float]]:
    headers = {"Authorization": f"Bearer {key}"}
    done: list[Run] = []
    hybrid: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        for i in range(runs + 3):  # three to warm every stage up
            question = questions[i % len(questions)]
            started = time.perf_counter()
            resp = await http.post("/v1/search", json={"query": question, "mode": "hybrid"}, headers=headers)
            resp.raise_for_status()
            took = (time.perf_counter() - started) * 1000
            sent, result = time.time() * 1000, None
            async with http.stream("POST", "/v1/search", json={"query": question, "mode": "agentic"},
                                   headers={**headers, "Accept": "text/event-stream"}) as sse:
                async for ev in sse_events(sse):
                    if ev.event == "done":
                        result = json.loads(ev.data)
            if i < 3 or result is None:
                continue
            hybrid.append(took)
            done.append(Run(sent, time.time() * 1000, result["run_id"], result["usage"]["model_calls"]))
    return done, hybrid


def _entries(redis: Any) -> dict[str, list[tuple[int, str]]]:
    """Each run's (server ms, stream) entries on the stage streams."""
    by_run: dict[str, list[tuple[int, str]]] = {}
    for stream, key in ((name, key) for name in STAGE_STREAMS for key in streams.partitions(name)):
        for entry_id, fields in redis.xrange(key):
            message = json.loads(json.loads(fields[DATA_FIELD.encode()])["data"])
            by_run.setdefault(message.get("run_id", ""), []).append((int(entry_id.split(b"-")[0]), stream))
    return by_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--latency", type=float, default=0.2, help="scripted model seconds per call")
    args = parser.parse_args()
    env = {"PM_SEARCH_RATE_PER_MINUTE": "0", "PM_MODEL_TIMEOUT_SECONDS": "60"}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with scripted_model(args.latency, work / "model") as model, demo_stack(work, model.base_url, env, TENANT) as (
            stack,
            key,
        ):
            runs, hybrid = asyncio.run(_ask(stack.gateway_url, key, eval_questions(), args.runs))
            by_run = _entries(stack.redis_client())
    paths = [hops(r, by_run.get(r.run_id, []), args.latency * 1000) for r in runs]
    shapes = Counter(tuple(name for name, _ in p) for p in paths)
    shape, count = shapes.most_common(1)[0]
    same = [p for p in paths if tuple(name for name, _ in p) == shape]
    baseline = statistics.median(hybrid)
    rows, figures = [], {}
    for i, name in enumerate(shape):
        took = [p[i][1] for p in same]
        figures[name] = round(statistics.median(took), 1)
        rows.append({"hop": name, "p50 ms": figures[name], "mean ms": round(statistics.mean(took), 1),
                     "p50 / hybrid search": round(figures[name] / baseline, 2)})
    overhead = statistics.median([sum(t for _, t in p) for p in same])
    rows.append({"hop": "overhead, whole run", "p50 ms": round(overhead, 1), "mean ms": "",
                 "p50 / hybrid search": round(overhead / baseline, 2)})
    print(f"{args.runs} lone runs, scripted model {args.latency:g} s a call; the most common path, "
          f"{count} runs ({len(shapes)} paths in all); baseline: a hybrid search through the gateway, p50 {baseline:.1f} ms")
    print(format_table(rows))
    emit_json({
        "bench": "path", "runs": len(runs), "path_runs": count, "paths": len(shapes), "model_latency_s": args.latency,
        "baseline_hybrid_p50_ms": round(baseline, 1), "hops_p50_ms": figures, "overhead_p50_ms": round(overhead, 1),
        "overhead_per_hybrid": round(overhead / baseline, 2),
    })


if __name__ == "__main__":
    main()
