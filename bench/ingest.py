"""Import benchmark: ``python -m bench.ingest [--messages 2000]``.

A generated demo-like mailbox (``bench.mailgen``: three Maildirs, threads, attachments,
copies) imported through ``pmsearch ingest`` into a stack of Redis, the searcher and the
gateway on free ports, then:

- throughput in messages/s (files read, copies included) and chunk texts embedded/s,
  beside the embedder's ceiling from its FLOPs per text and this machine's measured
  matrix-multiply rate; with ``--baseline``, the same import first on the PyTorch
  embedder (the earlier default; needs ``pip install '.[torch]'``) for the ratio;
- a re-import after the Maildirs gained 100 messages (only the new ones are read);
- ``kill -9`` of ``pmsearch ingest`` and then of the searcher at random points of
  another import, each followed by a re-run: every message must be in the index exactly
  once;
- keyword / semantic / hybrid search p50/p95 through the gateway, and at the index
  itself (query embedding included) after the stack stops;
- peak RSS of the searcher and of the CLI;
- with ``--documents``, the same mail again as another tenant, with a third of its
  attachments Word, Excel and PowerPoint files and calendar invitations (``bench.mailgen``),
  for msg/s with and without them (each format's own time: ``bench.attachments``).

Prints a table, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import email.parser
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench._util import emit_json, format_table, latency_ms
from bench.mailgen import MAILBOXES, write_maildirs
from pmsearch.cli.stack import ROOT, Stack

TENANT = "acme"
QUERIES = ["invoice due amount", "claim photos assessor visit", "pickup schedule gate", "ticket laptop technician",
           "meeting agenda budget review", "INV-2019-0042", "police report for the Golf", "bank details changed",
           "tracking link for the pallets", "password rules", "out of office who covers", "repair invoice settle"]


def _pmsearch_ingest(stack: Stack, source: Path, mailbox: str, *extra: str, tenant: str = TENANT) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PM_")}
    env.update(PM_GATEWAY_URL=stack.gateway_url, PM_ADMIN_TOKEN=stack.secrets.admin_token,
               PM_VAR_DIR=str(stack.var_dir))
    return subprocess.Popen([sys.executable, "-c", _CLI_WITH_RSS, "ingest", str(source), "-t", tenant, "-m", mailbox,
                             *extra], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


# `pmsearch ingest`, reporting its own peak RSS on its last stderr line as it exits (the
# bench's children include the stack's services, so their shared figure would not do).
_CLI_WITH_RSS = """
import atexit, resource, sys
atexit.register(lambda: print(f"peak_rss_kb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr))
sys.argv[0] = "pmsearch"
from pmsearch.cli.main import main
main()
"""
_cli_peak_kb = 0


def _note_rss(errors: str) -> None:
    global _cli_peak_kb
    for line in errors.splitlines():
        if line.startswith("peak_rss_kb="):
            _cli_peak_kb = max(_cli_peak_kb, int(line.split("=")[1]))


def import_all(stack: Stack, root: Path, tenant: str = TENANT) -> dict[str, Any]:
    """Each mailbox of ``root`` through ``pmsearch ingest``, one after another."""
    totals: Counter[str] = Counter()
    start = time.perf_counter()
    for box in MAILBOXES:
        proc = _pmsearch_ingest(stack, root / box, box, tenant=tenant)
        out, errors = proc.communicate(timeout=6 * 3600)
        _note_rss(errors)
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"pmsearch ingest {box} failed: {errors.strip()[-500:]}")
        totals.update(_totals(out))
    seconds = time.perf_counter() - start
    files = totals["indexed"] + totals["already present"] + totals["unchanged since the last import"] + totals["skipped"]
    return {"seconds": round(seconds, 2), "files": files, "messages_per_s": round(files / seconds, 1), **totals}


def _totals(out: str) -> Counter[str]:
    # "indexed 10, already present 2, unchanged since the last import 0, skipped 0"
    last = out.strip().splitlines()[-1]
    found: Counter[str] = Counter()
    for part in last.split(", "):
        name, _, number = part.rpartition(" ")
        found[name] += int(number)
    return found


def _peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def _stack(work: Path, name: str, backend: str) -> Stack:
    # The per-key search rate would throttle the latency probe (0: no limit).
    return Stack(work / name, services=("searcher",), extra_env={
        "PM_EMBEDDING_BACKEND": backend, "PM_EMBEDDING_CACHE_DIR": str(ROOT / "var" / "models"),
        "PM_SEARCH_RATE_PER_MINUTE": "0"})


def kill_and_resume(stack: Stack, root: Path, rate: float, rng: random.Random) -> dict[str, Any]:
    """An import killed twice (the CLI, then the searcher) at random points, each time
    run again; returns when and what was killed and the final totals."""
    box = MAILBOXES[0]
    expected = sum(1 for _ in (root / box).rglob("*") if _.is_file() and _.parent.name in ("cur", "new"))
    events = []
    for victim in ("cli", "searcher"):
        after = rng.uniform(0.2, 0.8) * expected / max(rate, 1.0)
        proc = _pmsearch_ingest(stack, root / box, box)
        time.sleep(after)
        if victim == "cli":
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        else:
            os.kill(stack.procs["searcher"].pid, signal.SIGKILL)
            stack.procs["searcher"].wait()
            stack.restart("searcher")
            stack.wait_for_log("searcher", "searcher ready", 180)
            try:  # the gateway's call fails or the restarted searcher finishes it
                proc.communicate(timeout=600)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        events.append({"killed": victim, "after_s": round(after, 2)})
    proc = _pmsearch_ingest(stack, root / box, box)
    out, errors = proc.communicate(timeout=3600)
    return {"kills": events, "final": dict(_totals(out)), "mailbox": box, "files": expected}


def gateway_latency(stack: Stack, per_mode: int) -> dict[str, Any]:
    admin = {"Authorization": f"Bearer {stack.secrets.admin_token}"}
    key = httpx.post(f"{stack.gateway_url}/v1/admin/keys", headers=admin, timeout=30, json={
        "tenant_id": TENANT, "principal": "bench@acme.example", "mailboxes": list(MAILBOXES)}).json()["key"]
    headers = {"Authorization": f"Bearer {key}"}
    out = {}
    with httpx.Client(base_url=stack.gateway_url, headers=headers, timeout=60) as client:
        for mode in ("keyword", "semantic", "hybrid"):
            samples = []
            for i in range(per_mode + 5):
                text = f"{QUERIES[i % len(QUERIES)]} {i}"  # no two alike: the query cache must not flatter
                start = time.perf_counter()
                client.post("/v1/search", json={"query": text, "mode": mode, "limit": 10}).raise_for_status()
                if i >= 5:
                    samples.append(time.perf_counter() - start)
            out[mode] = latency_ms(samples)
    return out


def index_checks(data_dir: Path, sources: list[Path], per_mode: int) -> dict[str, Any]:
    """Open the stopped searcher's index: points, exactly-once per source message, and
    search latency at the index with the query embedded by the default embedder."""
    from pmsearch.services.searcher.embedding import OnnxEmbedder
    from pmsearch.services.searcher.index.base import IndexFilter
    from pmsearch.services.searcher.index.edge import EdgeIndex
    from pmsearch.services.searcher.ingest.parser import first_id

    index = EdgeIndex(data_dir, 384, optimize_after=0)
    flt = IndexFilter(tenant_id=TENANT, mailboxes=MAILBOXES)
    heads: dict[str, set[str]] = defaultdict(set)
    kinds: Counter[str] = Counter()
    for p in index.scroll(flt, limit=10_000_000):
        kinds[p.kind] += 1
        if p.kind == "body" and p.chunk_no == 0:
            heads[p.rfc_message_id].add(p.message_id)
    wanted = set()
    parser = email.parser.BytesHeaderParser()
    for source in sources:
        for f in source.rglob("*"):
            if f.is_file() and f.parent.name in ("cur", "new"):
                mid = first_id(parser.parsebytes(f.read_bytes()).get("Message-ID") or "")
                if mid:
                    wanted.add(mid)
    missing = sorted(m for m in wanted if m not in heads)
    twice = sorted(m for m in wanted if len(heads.get(m, ())) > 1)
    embedder = OnnxEmbedder(ROOT / "var" / "models")
    latency = {}
    for mode in ("keyword", "semantic", "hybrid"):
        samples = []
        for i in range(per_mode + 5):
            text = f"{QUERIES[i % len(QUERIES)]} {i}"
            start = time.perf_counter()
            dense = None if mode == "keyword" else embedder.embed([text])[0]
            index.query(flt, mode=mode, text=text, dense=dense, limit=10)
            if i >= 5:
                samples.append(time.perf_counter() - start)
        latency[mode] = latency_ms(samples)
    index.close()
    return {"points": dict(kinds), "messages": len(heads), "checked": len(wanted), "missing": len(missing),
            "indexed_twice": len(twice), "latency": latency}


def flops_ceiling(chunks_per_message: float) -> dict[str, float]:
    """Texts/s the machine's matrix-multiply rate allows MiniLM-L6 at the median demo
    chunk (72 tokens, bench.embedders), and the messages/s that makes."""
    a, b = np.random.rand(2048, 384).astype(np.float32), np.random.rand(384, 1536).astype(np.float32)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(10):
            a @ b
        best = min(best, time.perf_counter() - start)
    gflops = 2 * 2048 * 384 * 1536 * 10 / best / 1e9
    tokens = 72
    per_text = 6 * (2 * 4 * 384 * 384 + 2 * 2 * 384 * 1536 + 2 * 2 * 384 * tokens) * tokens
    texts = gflops * 1e9 / per_text
    return {"matmul_gflops": round(gflops, 1), "texts_per_s": round(texts, 1),
            "messages_per_s": round(texts / max(chunks_per_message, 1e-9), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2000, help="messages generated (copies come on top)")
    parser.add_argument("--baseline", action="store_true", help="import the same mail on the PyTorch embedder first")
    parser.add_argument("--queries", type=int, default=60, help="queries per search mode")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--documents", action="store_true",
                        help="also import the same mail with a third of its attachments Office files and invitations")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rows: list[dict[str, Any]] = []
    result: dict[str, Any] = {"bench": "ingest", "messages": args.messages}
    with tempfile.TemporaryDirectory(prefix="pm-ingest-") as tmp:
        work = Path(tmp)
        start = time.perf_counter()
        files = write_maildirs(work / "mail", args.messages, seed=args.seed)
        result["generated"] = {"files": sum(files.values()), "seconds": round(time.perf_counter() - start, 1)}
        print(f"generated {sum(files.values())} files in {result['generated']['seconds']} s", file=sys.stderr)
        if args.baseline:
            stack = _stack(work, "torch", "torch").start()
            try:
                result["torch"] = import_all(stack, work / "mail")
            finally:
                stack.stop()
            rows.append({"step": "import (torch)", **_row(result["torch"])})
            print(f"torch: {result['torch']}", file=sys.stderr, flush=True)
        stack = _stack(work, "onnx", "onnx").start()
        try:
            result["import"] = imported = import_all(stack, work / "mail")
            imported["searcher_peak_rss_mb"] = _peak_rss_mb(stack.procs["searcher"].pid)
            rows.append({"step": "import", **_row(imported)})
            print(f"onnx: {imported}", file=sys.stderr, flush=True)
            write_maildirs(work / "mail", 100, seed=args.seed + 1)
            result["reimport_100_new"] = again = import_all(stack, work / "mail")
            rows.append({"step": "re-import, 100 new", **_row(again)})
            print(f"re-import: {again}", file=sys.stderr, flush=True)
            kill_mail = work / "mail-kill"
            write_maildirs(kill_mail, max(300, args.messages // 4), seed=args.seed + 2)
            result["kill"] = kill_and_resume(stack, kill_mail, imported["messages_per_s"], rng)
            result["gateway_latency_ms"] = gateway_latency(stack, args.queries)
            if args.documents:
                result["import_with_documents"] = with_documents(stack, work, args)
                rows.append({"step": "import, with documents", **_row(result["import_with_documents"])})
        finally:
            stack.stop()
        result["cli_peak_rss_mb"] = round(_cli_peak_kb / 1024, 1)
        result["index"] = index_checks(stack.var_dir / "data" / "qdrant-edge", [work / "mail", kill_mail / MAILBOXES[0]],
                                       args.queries)
    points = result["index"]["points"]
    chunks_per_message = sum(points.values()) / max(result["index"]["messages"], 1)
    result["ceiling"] = flops_ceiling(chunks_per_message)
    result["import"]["chunks_per_message"] = round(chunks_per_message, 2)
    if "torch" in result:
        result["speedup_vs_torch"] = round(result["import"]["messages_per_s"] / result["torch"]["messages_per_s"], 2)
    print(format_table(rows))
    print()
    lat = [{"where": where, "mode": mode, **v} for where, table in
           (("gateway", result["gateway_latency_ms"]), ("index", result["index"]["latency"])) for mode, v in table.items()]
    print(format_table(lat))
    print(f"\nkill -9 and resume: {result['kill']['kills']}; every message once: "
          f"missing {result['index']['missing']}, twice {result['index']['indexed_twice']} "
          f"of {result['index']['checked']} checked")
    print(f"ceiling: {result['ceiling']}; searcher peak RSS {imported.get('searcher_peak_rss_mb')} MB, "
          f"CLI peak RSS {result['cli_peak_rss_mb']} MB")
    emit_json(result)


def with_documents(stack: Stack, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The first import's mail again, with a third of its attachments Office files and
    invitations, as another tenant on the same stack (so nothing is already present)."""
    files = write_maildirs(work / "mail-documents", args.messages, seed=args.seed, documents=True)
    documents = sum(1 for p in (work / "mail-documents").rglob("*") if p.is_file() and _has_document(p))
    imported = import_all(stack, work / "mail-documents", tenant="documents")
    return {**imported, "generated_files": sum(files.values()), "files_with_a_document": documents}


def _has_document(path: Path) -> bool:
    head = path.read_bytes()
    return any(ext in head for ext in (b'.docx"', b'.xlsx"', b'.pptx"', b'.ics"'))


def _row(r: dict[str, Any]) -> dict[str, Any]:
    return {"files": r["files"], "seconds": r["seconds"], "msg/s": r["messages_per_s"], "indexed": r.get("indexed", 0),
            "present": r.get("already present", 0), "unchanged": r.get("unchanged since the last import", 0),
            "skipped": r.get("skipped", 0)}


if __name__ == "__main__":
    main()
