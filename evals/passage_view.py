"""What the model gets to read, without a model: for every answerable question of the
labelled set, the run's first search (as the planner sends it) and the passages built
from its evidence; how often a supporting message and every key fact are in view, and
what the passages cost in characters.

A right answer needs its facts in the passages, so "facts in view" bounds answered-right
from above; the rest is the model. It runs in seconds, so passage and search changes are
measured here before a model run.

    .venv/bin/python evals/passage_view.py [--set evals/demo.yaml] [--data var/data] [--show ID]

A set that brings its own mail (``evals/real/dev.yaml``) is read with one key per
mailbox; point ``--data`` at the data folder of a stack that loaded it (``pmsearch eval
--start`` with ``PM_VAR_DIR``), or give ``--build`` to import the set's mail (or the demo
mailbox) into ``--data`` first when it holds no index, with the configured embedder
(``PM_EMBEDDING_BACKEND``).

Reads a copy of the index (the running searcher holds the original's lock). The last
line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pmsearch.cli.demo import DEMO_KEYS  # noqa: E402
from pmsearch.cli.evaluation.corpus import corpus_keys, set_corpus  # noqa: E402
from pmsearch.cli.evaluation.questions import corpus_message_ids, load_questions, resolve_supporting  # noqa: E402
from pmsearch.cli.evaluation.scoring import contains  # noqa: E402
from pmsearch.services.planner.service import first_search  # noqa: E402
from pmsearch.services.searcher.embedding import embedder_id, make_embedder  # noqa: E402
from pmsearch.services.searcher.index import open_index  # noqa: E402
from pmsearch.services.searcher.ingest.readers import demo_mailboxes, read_path  # noqa: E402
from pmsearch.services.searcher.ingest.service import Ingester  # noqa: E402
from pmsearch.services.searcher.query_cache import QueryEmbeddingCache  # noqa: E402
from pmsearch.services.searcher.repository import ScopedMailRepository  # noqa: E402
from pmsearch.services.searcher.service import ToolRunner  # noqa: E402
from pmsearch.shared import passages as P  # noqa: E402
from pmsearch.shared.scope import Scope  # noqa: E402
from pmsearch.shared.settings import SearcherSettings  # noqa: E402


def _scope(label: str, keys: dict[str, dict]) -> Scope:
    key = keys[label]
    return Scope(tenant_id=key["tenant_id"], principal=key["principal"], mailboxes=tuple(key["mailboxes"]),
                 expires_at=time.time() + 3600)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", type=Path, default=ROOT / "evals/demo.yaml")
    ap.add_argument("--data", type=Path, default=ROOT / "var/data")
    ap.add_argument("--demo", type=Path, default=ROOT / "data/demo")
    ap.add_argument("--build", action="store_true", help="import the set's mail into a scratch index first")
    ap.add_argument("--show", help="print the passages of this question id")
    ap.add_argument("--max-passages", type=int, default=P.MAX_PASSAGES, help="try another passage count")
    ap.add_argument("--budget", type=int, default=P.BUDGET_CHARS, help="try another character budget")
    ap.add_argument("--message-chars", type=int, default=P.MESSAGE_CHARS, help="try another size a message")
    args = ap.parse_args()
    P.MAX_PASSAGES, P.MESSAGE_CHARS = args.max_passages, args.message_chars

    questions = [q for q in load_questions(args.set) if q.facts]
    corpus = set_corpus(args.set)
    keys = corpus_keys(corpus) if corpus is not None else DEMO_KEYS
    resolve_supporting(questions, corpus_message_ids(corpus or args.demo))
    if args.build and not (args.data / "qdrant-edge").exists():
        _import(args.data, corpus or args.demo)
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(args.data / "qdrant-edge", Path(tmp) / "qdrant-edge")
        settings = SearcherSettings(data_dir=Path(tmp), scope_key="x" * 32)
        embedder = make_embedder(settings)
        index = open_index(settings, embedder.dim, embedder_id(settings))
        runner = ToolRunner(ScopedMailRepository(index, QueryEmbeddingCache(embedder, 256)))
        rows = []
        for q in questions:
            done = runner.run(_scope(q.key, keys), first_search(q.question))
            shown = P.build(q.question, done.evidence, budget=args.budget)
            text = "\n".join(f"{p.header}\n{p.text}" for p in shown)
            in_view = {p.message_id for p in shown}
            rows.append({
                "id": q.id,
                "tags": q.tags,
                "supporting_found": bool(q.supporting_ids() & {m.message_id for m in done.evidence}),
                "supporting_shown": bool(q.supporting_ids() & in_view),
                "facts_shown": all(any(contains(text, s) for s in fact) for fact in q.facts),
                "chars": len(text),
                "passages": len(shown),
            })
            if args.show == q.id:
                print(P.render(shown, _Plain()))
        index.close()

    n = len(rows)
    summary = {
        "questions": n,
        "supporting_found": sum(r["supporting_found"] for r in rows),
        "supporting_shown": sum(r["supporting_shown"] for r in rows),
        "facts_shown": sum(r["facts_shown"] for r in rows),
        "chars_mean": round(statistics.mean(r["chars"] for r in rows)),
        "passages_mean": round(statistics.mean(r["passages"] for r in rows), 2),
    }
    print(f"{'question':40} found shown facts chars")
    for r in rows:
        print(f"{r['id'][:40]:40} {r['supporting_found']!s:5} {r['supporting_shown']!s:5} {r['facts_shown']!s:5} {r['chars']}")
    print(f"\nof {n} answerable: supporting message found {summary['supporting_found']}, shown "
          f"{summary['supporting_shown']}; every key fact shown {summary['facts_shown']}; "
          f"{summary['chars_mean']} characters in {summary['passages_mean']} passages on average")
    for lang in ("en", "fr", "de"):
        mine = [r for r in rows if _language(r["tags"]) == lang]
        if mine:
            summary[f"facts_shown_{lang}"] = f"{sum(r['facts_shown'] for r in mine)}/{len(mine)}"
            summary[f"supporting_found_{lang}"] = f"{sum(r['supporting_found'] for r in mine)}/{len(mine)}"
    print("by language:", ", ".join(f"{k} {v}" for k, v in summary.items() if k[-3:] in ("_en", "_fr", "_de")))
    missed = [r["id"] for r in rows if not r["facts_shown"]]
    print("facts not shown:", ", ".join(missed))
    print(json.dumps(summary))
    return 0


def _import(data: Path, mail: Path) -> None:
    """Every mailbox under ``mail`` into a new index at ``data``, as ingest imports it."""
    settings = SearcherSettings(data_dir=data, scope_key="x" * 32)
    embedder = make_embedder(settings)
    index = open_index(settings, embedder.dim, embedder_id(settings))
    ingester = Ingester(index, embedder, settings.chunk_chars)
    for tenant, mailbox, path in demo_mailboxes(mail):
        ingester.ingest(tenant, mailbox, [(r.raw, r.folder, r.label) for r in read_path(path)])
    index.close()


def _language(tags: list[str]) -> str:
    return "fr" if "french" in tags else "de" if "german" in tags else "en"


class _Plain:
    """A fence that marks nothing, for reading passages by eye."""

    marker = "-"

    def wrap(self, _kind: str, body: str) -> str:
        return body


if __name__ == "__main__":
    raise SystemExit(main())
