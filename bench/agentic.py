"""The agentic loop's own overhead, and the real local model per question.

Scripted part: a scripted model that answers every call after a fixed latency; runs
stream over SSE through the whole stack (five processes, real Redis). Per run:
overhead = end-to-end time minus the model's time (calls x latency; the plan call
overlaps the first search, so this slightly overstates the overhead), and the time to
the first ``evidence`` event. At 1, 10 and 50 runs in flight. Baseline in the same run:
a plain hybrid search through the gateway.

Real part (skip with --no-real): the embedded Qwen2.5-Coder-1.5B on llama.cpp's server,
wall time and tokens per demo question.

    python -m bench.agentic [--latency 0.5] [--levels 1,10,50] [--no-real]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench._util import emit_json, format_table, latency_ms
from pmsearch.cli.stack import Stack
from pmsearch.testing.brains import honest
from pmsearch.testing.scripted_model import ScriptedModel

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "data" / "demo"
QUESTION = "Did the insurer accept the Golf claim after we sent the photos?"
REAL_QUESTIONS = [
    ("acme/alice", "Did the insurer accept the Golf claim after we sent the photos?"),
    ("acme/alice", "Who is handling the Golf claim at the insurer?"),
    ("acme/alice", "Where does Spedition Hüber pick up from April?"),
    ("globex/carol", "What did Harbor Mutual decide on the Transit hail claim?"),
    ("acme/alice", "What is the budget of our moon base?"),
]
TARGET_OVERHEAD_P95_MS = 150
TARGET_FIRST_EVIDENCE_P95_MS = 500


async def one_run(client: httpx.AsyncClient, key: str) -> dict[str, float]:
    started = time.perf_counter()
    first_evidence = None
    event = None
    async with client.stream(
        "POST",
        "/v1/search",
        json={"query": QUESTION, "mode": "agentic"},
        headers={"Authorization": f"Bearer {key}", "Accept": "text/event-stream"},
    ) as resp:
        resp.raise_for_status()
        async for line in resp.aiter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
                if event == "evidence" and first_evidence is None:
                    first_evidence = time.perf_counter() - started
            elif line.startswith("data:") and event == "done":
                result = json.loads(line[5:])
                return {
                    "total": time.perf_counter() - started,
                    "first_evidence": first_evidence if first_evidence is not None else float("nan"),
                    "model_calls": result["usage"]["model_calls"],
                    "outcome": result["outcome"],
                }
    raise RuntimeError("stream ended without done")


async def level(base_url: str, key: str, in_flight: int, runs: int) -> list[dict[str, Any]]:
    sem = asyncio.Semaphore(in_flight)
    limits = httpx.Limits(max_connections=in_flight + 5)
    async with httpx.AsyncClient(base_url=base_url, timeout=120, limits=limits) as client:

        async def guarded() -> dict[str, Any]:
            async with sem:
                return await one_run(client, key)

        return await asyncio.gather(*(guarded() for _ in range(runs)))


def scripted(latency: float, levels: list[int], work: Path) -> dict[str, Any]:
    from rich.console import Console

    from pmsearch.cli.demo import load_demo

    brain = honest()
    with ScriptedModel(lambda body: brain(body).model_copy(update={"delay": latency})) as model:
        stack = Stack(
            work / "scripted",
            extra_env={"PM_MODEL_BASE_URL": model.base_url, "PM_MODEL_OUTPUT": "json_schema", "PM_AGENT_MODEL": "scripted",
                       # Throughput with one key, so without the per-key limits.
                       "PM_SEARCH_RATE_PER_MINUTE": "0", "PM_MAX_STREAMS_PER_KEY": "1000", "PM_TENANT_SHARE": "1.0"},
        )
        try:
            stack.start()
            keys = load_demo(stack, DEMO, Console(quiet=True))
            key = keys["acme/alice"]
            admin = {"Authorization": f"Bearer {stack.secrets.admin_token}"}
            with httpx.Client(base_url=stack.gateway_url, timeout=60) as http:
                http.patch(
                    "/v1/admin/tenants/acme/settings",
                    json={"search.agentic_daily_cap": 1_000_000, "search.agentic_max_seconds": 60, "search.agentic_max_steps": 6},
                    headers=admin,
                ).raise_for_status()
                baseline = []
                for _ in range(30):
                    t = time.perf_counter()
                    http.post(
                        "/v1/search", json={"query": QUESTION, "mode": "hybrid"}, headers={"Authorization": f"Bearer {key}"}
                    ).raise_for_status()
                    baseline.append(time.perf_counter() - t)
            asyncio.run(level(stack.gateway_url, key, 1, 3))  # warm up every stage
            out: dict[str, Any] = {"model_latency_s": latency, "baseline_hybrid": latency_ms(baseline[5:]), "levels": {}}
            for n in levels:
                results = asyncio.run(level(stack.gateway_url, key, n, max(10, n)))
                overhead = [r["total"] - r["model_calls"] * latency for r in results]
                out["levels"][n] = {
                    "runs": len(results),
                    "answered": sum(r["outcome"] == "answered" for r in results),
                    "total": latency_ms([r["total"] for r in results]),
                    "overhead": latency_ms(overhead),
                    "first_evidence": latency_ms([r["first_evidence"] for r in results]),
                    "model_calls_per_run": round(sum(r["model_calls"] for r in results) / len(results), 2),
                }
            return out
        finally:
            stack.stop()


def real(work: Path) -> list[dict[str, Any]]:
    from rich.console import Console

    from pmsearch.cli.demo import load_demo

    stack = Stack(work / "real", local_model=True)
    rows = []
    try:
        stack.start()
        keys = load_demo(stack, DEMO, Console(quiet=True))
        with httpx.Client(base_url=stack.gateway_url, timeout=300) as http:
            for label, question in REAL_QUESTIONS:
                t = time.perf_counter()
                r = http.post(
                    "/v1/search", json={"query": question, "mode": "agentic"}, headers={"Authorization": f"Bearer {keys[label]}"}
                ).json()
                u = r["usage"]
                rows.append(
                    {
                        "question": question[:48],
                        "outcome": r["outcome"],
                        "wall s": round(time.perf_counter() - t, 1),
                        "steps": u["steps"],
                        "model calls": u["model_calls"],
                        "prompt tok": u["prompt_tokens"],
                        "completion tok": u["completion_tokens"],
                        "kept": len(r["answer"]["sentences"]) if r.get("answer") else 0,
                        "removed": len(r["trace"]["removed_sentences"]),
                    }
                )
    finally:
        stack.stop()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.5, help="scripted model seconds per call")
    parser.add_argument("--levels", default="1,10,50")
    parser.add_argument("--no-real", action="store_true")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        s = scripted(args.latency, levels, work)
        real_rows = [] if args.no_real else real(work)
    rows = [
        {
            "in flight": n,
            "runs": v["runs"],
            "answered": v["answered"],
            "total p50 ms": v["total"]["p50_ms"],
            "overhead p50 ms": v["overhead"]["p50_ms"],
            "overhead p95 ms": v["overhead"]["p95_ms"],
            "first evidence p50 ms": v["first_evidence"]["p50_ms"],
            "first evidence p95 ms": v["first_evidence"]["p95_ms"],
        }
        for n, v in s["levels"].items()
    ]
    print(f"scripted model: {args.latency:g} s per call, {s['levels'][levels[0]]['model_calls_per_run']} calls per run")
    print(format_table(rows))
    b = s["baseline_hybrid"]
    print(f"baseline, hybrid search through the gateway: p50 {b['p50_ms']} ms, p95 {b['p95_ms']} ms")
    ten = s["levels"].get(10)
    summary: dict[str, Any] = {"bench": "agentic", "scripted": s, "real_model": real_rows}
    if ten:
        summary["overhead_p95_ms_at_10"] = ten["overhead"]["p95_ms"]
        summary["overhead_target_met"] = ten["overhead"]["p95_ms"] <= TARGET_OVERHEAD_P95_MS
        summary["overhead_p50_over_baseline_p50"] = round(ten["overhead"]["p50_ms"] / b["p50_ms"], 2)
    summary["first_evidence_p95_ms_max"] = max(v["first_evidence"]["p95_ms"] for v in s["levels"].values())
    summary["first_evidence_target_met"] = summary["first_evidence_p95_ms_max"] <= TARGET_FIRST_EVIDENCE_P95_MS
    if real_rows:
        print("\nreal local model (Qwen2.5-Coder-1.5B Q4_K_M, llama.cpp server, 2 cores):")
        print(format_table(real_rows))
    emit_json(summary)


if __name__ == "__main__":
    main()
