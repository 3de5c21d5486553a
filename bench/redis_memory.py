"""Benchmark: the Redis memory 50 runs hold when a stranger's 2 MB message matches them.

Run with ``python -m bench.redis_memory``. Anyone can mail pmsearch a 2 MB text stuffed
with common words; every run whose search finds it used to copy it whole into its
evidence and its observations, which stay in Redis (shared by every tenant, 1 GB,
``noeviction``) until minutes after the run. Two stacks in the same run, each with the
demo mailbox, the scripted model and that message in alice's mailbox:

* ``bounded`` - as shipped: a run reads at most ``PM_EVIDENCE_MAX_CHARS`` (32,000
  characters) of a message;
* ``whole``   - ``PM_EVIDENCE_MAX_CHARS`` at 4,000,000: how runs read it before (10
  runs only: verifying against 2 MB takes seconds a sentence, so each run is slow).

For each: Redis's ``used_memory`` once the import has settled (its raw mail deleted from
the ingest stream), then after the runs, asked one after another (every run finds the
message), while their evidence is still held. Prints a table and, last, one JSON line.
Target: growth <= 10 MB for 50 runs.
"""

from __future__ import annotations

import base64
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench._harness import QUESTIONS, demo_stack, scripted_model
from bench._util import emit_json, format_table

RUNS = 50
WHOLE_RUNS = 10
SETTLE_SECONDS = 8  # the worker runtime trims consumed stream entries every 5 s
MESSAGE_CHARS = 2_000_000
TARGET_MB = 10.0
TENANT = {"search.agentic_daily_cap": 100_000, "search.agentic_max_seconds": 60, "search.agentic_max_steps": 4}


def hostile_mail() -> bytes:
    """2 MB of the words the demo questions ask about, as a stranger would send them."""
    words = " ".join(QUESTIONS).replace("?", "") + " "
    body = (words * (MESSAGE_CHARS // len(words) + 1))[:MESSAGE_CHARS]
    head = (
        "From: Claims Desk <desk@claims-update.example>\r\nTo: alice@acme.example\r\n"
        "Subject: Golf claim insurer update\r\nDate: Mon, 01 Apr 2024 09:00:00 +0000\r\n"
        "Message-ID: <hostile-2mb@claims-update.example>\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
    )
    return head.encode() + body.encode()


def measure(label: str, max_chars: int, work: Path, model_url: str, runs: int) -> dict[str, float]:
    env = {"PM_EVIDENCE_MAX_CHARS": str(max_chars), "PM_SEARCH_RATE_PER_MINUTE": "0",
           "PM_MAX_STREAMS_PER_KEY": "1000", "PM_TENANT_SHARE": "1.0"}
    with demo_stack(work / label, model_url, env, TENANT) as (stack, key):
        admin = {"Authorization": f"Bearer {stack.secrets.admin_token}"}
        body = {"tenant_id": "acme", "mailbox": "alice", "raw": [base64.b64encode(hostile_mail()).decode()]}
        httpx.post(f"{stack.gateway_url}/v1/admin/ingest", json=body, headers=admin, timeout=300).raise_for_status()
        redis = stack.redis_client()
        time.sleep(SETTLE_SECONDS)
        before = int(redis.info("memory")["used_memory"])
        found = 0
        started = time.perf_counter()
        with httpx.Client(base_url=stack.gateway_url, timeout=120, headers={"Authorization": f"Bearer {key}"}) as client:
            for i in range(runs):
                resp = client.post("/v1/search", json={"query": QUESTIONS[i % len(QUESTIONS)], "mode": "agentic"})
                resp.raise_for_status()
                found += any(e["message_id"] for e in resp.json().get("evidence", [])
                             if "claims-update" in e.get("sender", ""))
        after = int(redis.info("memory")["used_memory"])
    growth = (after - before) / 2**20
    return {"runs": runs, "growth_mb": round(growth, 2), "per_run_mb": round(growth / runs, 3),
            "runs_finding_it": found, "seconds": round(time.perf_counter() - started, 1)}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp, scripted_model(0.02, Path(tmp) / "model") as model:
        figures = {
            "bounded": measure("bounded", 32_000, Path(tmp), model.base_url, RUNS),
            "whole": measure("whole", 4_000_000, Path(tmp), model.base_url, WHOLE_RUNS),
        }
    rows = [{"evidence": k, "runs": v["runs"], "runs that found it": v["runs_finding_it"],
             "Redis growth, MB": v["growth_mb"], "per run, MB": v["per_run_mb"], "seconds": v["seconds"]}
            for k, v in figures.items()]
    print(format_table(rows))
    met = figures["bounded"]["growth_mb"] <= TARGET_MB
    emit_json({"bench": "redis_memory", "runs": RUNS, "message_chars": MESSAGE_CHARS, "figures": figures,
               "target_growth_mb": TARGET_MB, "met": met})
    return 0


if __name__ == "__main__":
    sys.exit(main())
