"""Multilingual embedders against MiniLM: ``python -m bench.embedders_multilingual``.

For each embedder (``onnx``: the default int8 MiniLM; ``use``: multilingual USE v3;
``e5``: multilingual-e5-small 4-bit, see pmsearch/services/searcher/multilingual_embedder.py)
and each question set (``demo``: data/demo with evals/demo.yaml; ``real``: evals/real/mail
with evals/real/dev.yaml and test.yaml, one key per mailbox), the set's mail is imported
by the project's own ingest into a Qdrant Edge data folder, as a searcher would, and the
answerable questions are searched in their key's scope. Reported: the share of questions
with a supporting message in the top 10 (semantic, hybrid, keyword), overall, per
language (tags ``french``/``german``, else English) and per half of the real set; chunks/s
of ingest's embedding calls; p50 ms of embedding one query.

Fused variants, built from the separate indexes only (a cheap look before building an
index with two dense vectors): per question, message-level reciprocal-rank fusion (k 60)
of the semantic rankings of two embedders and the keyword ranking (``rrf:onnx+use``), and
as their baseline the same fusion over one embedder's semantic ranking and the keyword
ranking (``rrf:onnx``). These skip hybrid's exact-identifier step, so compare them with
each other rather than with ``hybrid``.

The data folders are kept under ``var/emb/<backend>/data`` (real set) and
``var/emb/<backend>/demo`` (demo set), each with a ``qdrant-edge`` folder and the embedder
recorded in it, and are reused by later runs (``--rebuild`` imports again): with
``PM_EMBEDDING_BACKEND=<backend>``, ``evals/passage_view.py --data var/emb/<backend>/data
--set evals/real/dev.yaml`` reads them. Their ``build.json`` holds the import timing.

Other work on the machine makes speeds noisy: compare within one run. Prints tables, then
one JSON object as the last line.

    python -m bench.embedders_multilingual [--backends onnx,use,e5] [--sets demo,real] [--fuse onnx+use] [--rebuild]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Sequence

from bench._util import emit_json, format_table, percentile
from pmsearch.cli.demo import DEMO_KEYS
from pmsearch.cli.evaluation.corpus import corpus_keys
from pmsearch.cli.evaluation.questions import Question, corpus_message_ids, load_questions, resolve_supporting
from pmsearch.services.searcher.embedding import embed_queries, embedder_id, make_embedder
from pmsearch.services.searcher.index import open_index
from pmsearch.services.searcher.ingest.readers import demo_mailboxes, read_path
from pmsearch.services.searcher.ingest.service import Ingester
from pmsearch.services.searcher.repository import ScopedMailRepository
from pmsearch.shared.scope import Scope
from pmsearch.shared.settings import SearcherSettings

ROOT = Path(__file__).resolve().parent.parent
SETS = {
    "demo": (ROOT / "data" / "demo", {"demo": ROOT / "evals" / "demo.yaml"}, "demo"),
    "real": (ROOT / "evals" / "real" / "mail",
             {"dev": ROOT / "evals" / "real" / "dev.yaml", "test": ROOT / "evals" / "real" / "test.yaml"}, "data"),
}
BACKENDS = ("onnx", "use", "e5")
K = 10
DEPTH = 50  # ranks each list brings to a fusion
RRF_K = 60
MODES = ("semantic", "hybrid", "keyword")


class Timed:
    """The embedder ingest calls, with the time its calls took and the texts it embedded."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.dim, self.seconds, self.texts = inner, inner.dim, 0.0, 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        start = time.perf_counter()
        out = self.inner.embed(texts)
        self.seconds += time.perf_counter() - start
        self.texts += len(texts)
        return out


class Queries:
    """Query vectors computed (and timed) beforehand: searches run on exactly these."""

    def __init__(self, dim: int, vectors: dict[str, list[float]]) -> None:
        self.dim, self.vectors = dim, vectors

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise AssertionError("searches embed through embed_query")

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]


def _settings(backend: str, data: Path) -> SearcherSettings:
    return SearcherSettings(data_dir=data, scope_key="x" * 32, embedding_backend=backend)


def build(backend: str, name: str, rebuild: bool) -> dict[str, Any]:
    """The set's mail in ``var/emb/<backend>/<folder>``, imported unless already there."""
    corpus, _, folder = SETS[name]
    data = ROOT / "var" / "emb" / backend / folder
    settings = _settings(backend, data)
    record = data / "build.json"
    if record.exists() and (data / "qdrant-edge").is_dir() and not rebuild:
        done = json.loads(record.read_text())
        if done.get("embedder") == embedder_id(settings):
            return done | {"reused": True}
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    timed = Timed(make_embedder(settings))
    timed.inner.embed(["warm up"])  # the model's load is not ingest time
    start = time.perf_counter()
    index = open_index(settings, timed.dim, embedder_id(settings))
    ingester = Ingester(index, timed, settings.chunk_chars)
    messages = 0
    for tenant, mailbox, path in demo_mailboxes(corpus):
        report = ingester.ingest(tenant, mailbox, [(r.raw, r.folder, r.label) for r in read_path(path)])
        messages += len(report.items)
    index.optimize()
    index.close()
    done = {"embedder": embedder_id(settings), "messages": messages, "texts": timed.texts,
            "embed_s": round(timed.seconds, 1), "chunks_per_s": round(timed.texts / max(timed.seconds, 1e-9), 1),
            "wall_s": round(time.perf_counter() - start, 1), "loadavg": os.getloadavg()[0]}
    record.write_text(json.dumps(done))
    return done | {"reused": False}


def questions(name: str) -> list[tuple[str, Question]]:
    """(half, question) for the set's answerable questions that name supporting messages."""
    corpus, halves, _ = SETS[name]
    out = [(half, q) for half, path in halves.items() for q in load_questions(path) if q.facts and q.supporting]
    resolve_supporting([q for _, q in out], corpus_message_ids(corpus))
    return out


def language(q: Question) -> str:
    return "fr" if "french" in q.tags else "de" if "german" in q.tags else "en"


def rankings(backend: str, name: str, asked: list[tuple[str, Question]]) -> dict[str, Any]:
    """Per mode, per question, the message ids found in order; and the query timing."""
    corpus, _, folder = SETS[name]
    settings = _settings(backend, ROOT / "var" / "emb" / backend / folder)
    embedder = make_embedder(settings)
    texts = list(dict.fromkeys(q.question for _, q in asked))
    for t in texts[:3]:
        embed_queries(embedder, [t])  # warm
    vectors, took = {}, []
    for t in texts:
        start = time.perf_counter()
        vectors[t] = embed_queries(embedder, [t])[0]
        took.append(time.perf_counter() - start)
    keys = corpus_keys(corpus) if name == "real" else DEMO_KEYS
    scopes = {label: Scope(tenant_id=s["tenant_id"], principal=s["principal"], mailboxes=tuple(s["mailboxes"]),
                           expires_at=time.time() + 86400) for label, s in keys.items()}
    index = open_index(settings, embedder.dim, embedder_id(settings))
    try:
        # Keyword scores use the index's kept term counts once read; until then Edge's own
        # (slightly different): wait, so a run does not depend on how fast they were read.
        index.wait_counted(120)
        repo = ScopedMailRepository(index, Queries(embedder.dim, vectors))
        # The top K as the search of K gives it; deeper lists (for fusion) are searches of their own.
        wanted = [(m, K) for m in MODES] + [("semantic", DEPTH), ("keyword", DEPTH)]
        ranked = {mode if limit == K else f"{mode}@{limit}": [
            [h.message_id for h in repo.search(scopes[q.key], q.question, mode, None, limit)] for _, q in asked]
            for mode, limit in wanted}
    finally:
        index.close()
    return {"ranked": ranked, "query_ms_p50": round(percentile([s * 1000 for s in took], 50), 2),
            "query_ms_p95": round(percentile([s * 1000 for s in took], 95), 2), "queries": len(texts)}


def fuse(*lists: list[str]) -> list[str]:
    score: dict[str, float] = {}
    for ranked in lists:
        for rank, mid in enumerate(ranked):
            score[mid] = score.get(mid, 0.0) + 1.0 / (RRF_K + rank + 1)
    return sorted(score, key=lambda m: -score[m])


def shares(found: list[list[str]], asked: list[tuple[str, Question]]) -> dict[str, Any]:
    """Share of questions with a supporting message in the top K, and the mean reciprocal
    rank of the first one (0 past K): all, per language, per half."""
    rr = [next((1 / (i + 1) for i, m in enumerate(ids[:K]) if m in q.supporting_ids()), 0.0)
          for ids, (_, q) in zip(found, asked)]
    groups: dict[str, list[float]] = {"all": rr}
    for r, (half, q) in zip(rr, asked):
        groups.setdefault(language(q), []).append(r)
        if half != "demo":
            groups.setdefault(half, []).append(r)
    return {g: {"hit": sum(r > 0 for r in v), "n": len(v), "share": round(sum(r > 0 for r in v) / len(v), 3),
                "mrr": round(sum(v) / len(v), 3)} for g, v in groups.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--sets", default="demo,real")
    parser.add_argument("--fuse", default="onnx+use,onnx+e5,use+e5", help="pairs of semantic rankings to fuse")
    parser.add_argument("--rebuild", action="store_true", help="import again even where a data folder exists")
    args = parser.parse_args()
    backends = [b for b in args.backends.split(",") if b]
    sets = [s for s in args.sets.split(",") if s]
    pairs = [tuple(p.split("+")) for p in args.fuse.split(",") if p and set(p.split("+")) <= set(backends)]
    builds: dict[str, dict[str, Any]] = {}
    results: dict[str, dict[str, Any]] = {}
    for name in sets:
        asked = questions(name)
        ranked: dict[str, dict[str, list[list[str]]]] = {}
        for backend in backends:
            builds[f"{backend}/{name}"] = build(backend, name, args.rebuild)
            got = rankings(backend, name, asked)
            ranked[backend] = got.pop("ranked")
            results[f"{backend}/{name}"] = got | {m: shares(ranked[backend][m], asked) for m in MODES}
        keyword = ranked[backends[0]][f"keyword@{DEPTH}"]  # the text index is the same in every folder
        for variant in [(b,) for b in backends] + pairs:
            fused = [fuse(*(ranked[b][f"semantic@{DEPTH}"][i] for b in variant), keyword[i]) for i in range(len(asked))]
            results[f"rrf:{'+'.join(variant)}/{name}"] = {"fused": shares(fused, asked)}

    rows = []
    for key, r in results.items():
        variant, name = key.rsplit("/", 1)
        for mode in ("semantic", "hybrid", "keyword", "fused"):
            if mode not in r or (mode == "keyword" and not variant.startswith(backends[0])):
                continue
            cells = r[mode]
            row: dict[str, Any] = {"set": name, "embedder": variant if mode != "keyword" else "-", "mode": mode}
            for g in ("all", "en", "fr", "de", "dev", "test"):
                if g in cells:
                    row[g] = f"{cells[g]['hit']}/{cells[g]['n']} {cells[g]['share']:.2f}"
            row["mrr"] = cells["all"]["mrr"]
            rows.append(row)
    print(format_table(rows, columns=["set", "embedder", "mode", "all", "en", "fr", "de", "dev", "test", "mrr"]))
    print(f"questions (answerable, naming supporting messages) with one in the top {K} of the scoped search of "
          f"their text; mrr: mean reciprocal rank of the first one (0 past {K}), all questions. rrf: message-level "
          f"reciprocal-rank fusion (k {RRF_K}, top {DEPTH} each) of the named semantic rankings and the keyword "
          "ranking, without hybrid's exact-identifier step.")
    speed = [{"set": k.rsplit("/", 1)[1], "embedder": k.rsplit("/", 1)[0], "texts": b["texts"],
              "chunks/s": b["chunks_per_s"], "embed s": b["embed_s"], "import s": b["wall_s"],
              "load avg": round(b["loadavg"], 1), "reused": b["reused"],
              "query ms p50": results[k]["query_ms_p50"], "p95": results[k]["query_ms_p95"]}
             for k, b in builds.items()]
    print()
    print(format_table(speed))
    print("chunks/s: texts ingest embedded per second of its embedding calls (when the folder was built; "
          "load avg: the machine's 1-minute load then). query ms: one question embedded alone, warm.")
    emit_json({"bench": "embedders_multilingual", "builds": builds, "results": results,
               "k": K, "rrf_k": RRF_K, "depth": DEPTH, "loadavg_at_end": os.getloadavg()[0]})


if __name__ == "__main__":
    main()
