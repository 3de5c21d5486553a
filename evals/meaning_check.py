"""Measure a check of meaning on recorded drafts: for every sentence the verifier keeps,
the embedded model is asked, in one constrained call, whether the source sentences the
sentence is aligned to (``pmsearch.shared.text.align``) say what it says. A "no" would remove the
sentence (removal only; the verifier itself holds no model). Prints the confusion table
against the sentences' labels (right: its question must be answered and it cites a
supporting message; wrong: anything else), the calls' latency and, last, one JSON line.
Starts the embedded model's server itself. Run from the repository root:

    .venv/bin/python evals/meaning_check.py var/eval/<stamp>/report.json [more reports ...]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import httpx

from pmsearch.cli.evaluation.corpus import set_corpus
from pmsearch.cli.evaluation.drafts import admin_client, for_report
from pmsearch.cli.evaluation.questions import Question, corpus_message_ids, load_questions, resolve_supporting
from pmsearch.cli.stack import free_port
from pmsearch.services.verifier.decide import decide
from pmsearch.shared.llm.local_server import DEFAULT_MODEL, MODEL_ALIAS, start_local_model
from pmsearch.shared.settings import cli_settings

ROOT = Path(__file__).resolve().parents[1]
PROMPT = (
    "You check one claim against the source text it cites. Answer true only if the source "
    "text says what the claim says (its facts, figures and who did what); answer false if "
    "the source says something else, says less, or does not say it.\n\nSource text:\n{source}\n\nClaim: {claim}"
)
# The embedded server's form of a constrained reply (pmsearch/shared/llm/dialects.py).
SCHEMA = {
    "type": "json_object",
    "schema": {"type": "object", "properties": {"supported": {"type": "boolean"}}, "required": ["supported"]},
}


def ask(client: httpx.Client, source: str, claim: str) -> tuple[bool, float]:
    started = time.perf_counter()
    reply = client.post("/chat/completions", json={
        "model": MODEL_ALIAS, "temperature": 0, "max_tokens": 12, "response_format": SCHEMA,
        "messages": [{"role": "user", "content": PROMPT.format(source=source[:1500], claim=claim)}],
    })
    reply.raise_for_status()
    answer = json.loads(reply.json()["choices"][0]["message"]["content"])
    return bool(answer.get("supported")), time.perf_counter() - started


def _right(question: Question, cited: list[str]) -> bool:
    return question.kind == "answerable" and bool(set(cited) & question.supporting_ids())


def main(paths: list[str]) -> None:
    settings = cli_settings()
    port = free_port()
    log = open(ROOT / "var" / "meaning-check-model.log", "ab")  # noqa: SIM115 - open while the server runs
    server = start_local_model(port, ROOT / DEFAULT_MODEL, log=log, ready_timeout=300)
    table: dict[str, Counter[str]] = {}
    seconds: list[float] = []
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}/v1", timeout=120) as client:
            for path in paths:
                report = json.loads(Path(path).read_text())
                set_path = Path(report["meta"]["set"])
                questions = {q.id: q for q in load_questions(set_path)}
                resolve_supporting(questions.values(), corpus_message_ids(set_corpus(set_path) or settings.demo_dir))
                drafts = for_report(Path(path), admin_client(settings.var_dir, settings.redis_port))
                counts: Counter[str] = table.setdefault(path, Counter())
                for rec in report["questions"]:
                    kept = drafts.get(rec.get("run_id") or "")
                    if rec["id"] not in questions or kept is None:
                        continue
                    result = decide(*kept, now=kept[0].usage.seconds)
                    for sentence in result.answer.sentences if result.answer else []:
                        source = "\n".join(c.excerpt.text for c in sentence.citations)
                        supported, took = ask(client, source, sentence.text)
                        seconds.append(took)
                        label = "right" if _right(questions[rec["id"]], [c.message_id for c in sentence.citations]) else "wrong"
                        counts[f"{label} {'kept' if supported else 'removed'}"] += 1
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    out = {}
    for path, counts in table.items():
        print(f"{path}\n| sentence | model says supported (kept) | model says not (removed) |\n|---|---|---|")
        for label in ("right", "wrong"):
            print(f"| {label} | {counts[f'{label} kept']} | {counts[f'{label} removed']} |")
        out[path] = dict(counts)
    p50 = statistics.median(seconds) if seconds else None
    print(f"calls {len(seconds)}, seconds per call p50 {p50}")
    print(json.dumps({"confusion": out, "calls": len(seconds), "p50_seconds": p50}))


if __name__ == "__main__":
    main(sys.argv[1:])
