"""Search latency at the searcher and through the gateway, and ingest throughput.

For 1k and 20k synthetic messages (bench.search's generator): p50/p95 of keyword,
semantic and hybrid search measured in the searcher's own code (the scoped repository:
query embedding, index query, grouping per message, snippets) and through the whole
path (HTTP → gateway → Redis → searcher worker → Redis → gateway). The searcher figure
is the baseline the gateway figure is compared with, in the same run.

Ingest: the demo mailbox through the real parser, embedder and Qdrant Edge, in process
and through the admin API.

    python -m bench.gateway [--sizes 1000,20000] [--queries 100]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench._util import emit_json, format_table, latency_ms
from bench.search import MAILBOXES, TENANT, WARMUP, _embedder, _queries, synth_mailbox
from pmsearch.cli.stack import Stack
from pmsearch.services.searcher.index.edge import EdgeIndex
from pmsearch.services.searcher.ingest.readers import demo_mailboxes, read_path
from pmsearch.services.searcher.ingest.service import Ingester
from pmsearch.services.searcher.repository import ScopedMailRepository
from pmsearch.shared.scope import Scope

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "data" / "demo"
MODES = ("keyword", "semantic", "hybrid")
TARGET_INGEST_PER_S = 80


def _timed(fn, items) -> list[float]:
    out = []
    for i, item in enumerate(items):
        start = time.perf_counter()
        fn(item)
        if i >= WARMUP:
            out.append(time.perf_counter() - start)
    return out


def measure(n_messages: int, queries: int, workdir: Path) -> dict[str, Any]:
    embedder = _embedder()
    # Latency with one key, so without its per-minute search limit.
    stack = Stack(workdir / f"stack-{n_messages}", services=("searcher",), extra_env={"PM_SEARCH_RATE_PER_MINUTE": "0",
                                                                                             "PM_TENANT_SHARE": "1.0"})
    index = EdgeIndex(stack.var_dir / "data" / "qdrant-edge", embedder.dim)
    chunks, _ = synth_mailbox(n_messages)
    for i in range(0, len(chunks), 1000):
        index.upsert(chunks[i : i + 1000])
    index.optimize()
    texts = _queries(queries + WARMUP)
    scope = Scope(tenant_id=TENANT, principal="bench", mailboxes=MAILBOXES, expires_at=time.time() + 3600)
    repo = ScopedMailRepository(index, embedder)
    out: dict[str, Any] = {"n_messages": n_messages, "searcher": {}, "gateway": {}}
    for mode in MODES:
        out["searcher"][mode] = latency_ms(_timed(lambda t, mode=mode: repo.search(scope, t, mode, None, 10), texts))
    index.close()  # one process owns an Edge folder: hand it to the searcher worker

    try:
        stack.start()
        admin = {"Authorization": f"Bearer {stack.secrets.admin_token}"}
        with httpx.Client(base_url=stack.gateway_url, timeout=60) as http:
            key = http.post(
                "/v1/admin/keys",
                json={"tenant_id": TENANT, "principal": "bench", "mailboxes": list(MAILBOXES), "permissions": ["search"]},
                headers=admin,
            ).json()["key"]
            auth = {"Authorization": f"Bearer {key}"}
            for mode in MODES:

                def call(text: str, mode: str = mode) -> None:
                    http.post("/v1/search", json={"query": text, "mode": mode, "limit": 10}, headers=auth).raise_for_status()

                out["gateway"][mode] = latency_ms(_timed(call, texts))
    finally:
        stack.stop()
    return out


def measure_ingest(workdir: Path) -> dict[str, Any]:
    """Demo mailbox: in process (parser, embedder, Edge) and through the admin API."""
    embedder = _embedder()
    raws = [(tenant, box, [(r.raw, r.folder, r.label) for r in read_path(path)]) for tenant, box, path in demo_mailboxes(DEMO)]
    n = sum(len(items) for _, _, items in raws)
    ingester = Ingester(EdgeIndex(workdir / "ingest-edge", embedder.dim), embedder, 1200)
    start = time.perf_counter()
    for tenant, box, items in raws:
        ingester.ingest(tenant, box, items)
    in_process = time.perf_counter() - start

    from rich.console import Console

    from pmsearch.cli.demo import load_demo

    stack = Stack(workdir / "ingest-stack", services=("searcher",))
    try:
        stack.start()
        start = time.perf_counter()
        load_demo(stack, DEMO, Console(quiet=True))
        through_api = time.perf_counter() - start
    finally:
        stack.stop()
    return {
        "messages": n,
        "in_process_msgs_per_s": round(n / in_process, 1),
        "admin_api_msgs_per_s": round(n / through_api, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,20000")
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ingest = measure_ingest(work)
        runs = [measure(int(n), args.queries, work) for n in args.sizes.split(",")]
    rows = []
    for r in runs:
        for where in ("searcher", "gateway"):
            row: dict[str, Any] = {"messages": r["n_messages"], "measured at": where}
            for mode in MODES:
                row[f"{mode} p50 ms"] = r[where][mode]["p50_ms"]
                row[f"{mode} p95 ms"] = r[where][mode]["p95_ms"]
            rows.append(row)
    print(format_table(rows))
    print(
        f"ingest, demo mailbox ({ingest['messages']} messages): {ingest['in_process_msgs_per_s']} msg/s in process, "
        f"{ingest['admin_api_msgs_per_s']} msg/s through the admin API (target {TARGET_INGEST_PER_S})"
    )
    ratios = {
        str(r["n_messages"]): {m: round(r["gateway"][m]["p50_ms"] / r["searcher"][m]["p50_ms"], 2) for m in MODES}
        for r in runs
    }
    print(f"gateway p50 / searcher p50: {ratios}")
    emit_json({"bench": "gateway", "ingest": ingest, "runs": runs, "gateway_over_searcher_p50": ratios})


if __name__ == "__main__":
    main()
