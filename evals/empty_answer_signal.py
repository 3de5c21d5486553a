"""The model's own probability of answering nothing, as an abstention signal, counted on
an evaluation run's answered questions.

A written answer attempt replies ``{"answer": [...]}`` under a grammar, so the model's
one decision to answer or not is its first token inside the list: ``]`` (nothing) or
``{`` (a sentence). For each answered run this rebuilds the attempt's prompt from the
run's recorded evidence (the passages of all of it, as the run's last attempt saw them;
the first attempt may have seen fewer), reads the embedded model's next-token logits
after ``{"answer": [`` in-process, and takes P(empty) = P(]) / (P(]) + P({)), the
probability the grammar leaves between the two. Then, for each threshold, it counts the
answered runs a rule "P(empty) at least the threshold: no answer" would turn away: right
answers lost, wrong answers removed, must-not answers removed. Decide on a ``dev`` half;
counts on the drafts a threshold was chosen from bound what a rule does. A serving stack
would need the server to return these probabilities (see docs/evaluation.md).

Reads ``drafts.jsonl`` beside the report; one prompt a run, tens of seconds each on two
cores. Run from the repository root:

    .venv/bin/python evals/empty_answer_signal.py var/eval/<stamp>/report.json [--model PATH]

Prints each run's probability, the counts per threshold and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pmsearch.shared import passages as P  # noqa: E402
from pmsearch.shared import prompts  # noqa: E402
from pmsearch.shared.fencing import Fence  # noqa: E402
from pmsearch.shared.messages import EvidenceMessage  # noqa: E402

MODEL = ROOT / "models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MUST_NOT = ("unanswerable", "other_mailbox", "other_tenant")
THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.8)
OPENING = '{"answer": ['  # the grammar's reply up to the decision


def _chat(messages: list[dict]) -> str:
    """The messages in the embedded model's chat template (ChatML), the reply opened."""
    turns = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return f"{turns}<|im_start|>assistant\n{OPENING}"


def _auc(positive: list[float], negative: list[float]) -> float | None:
    if not positive or not negative:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in positive for n in negative)
    return round(wins / (len(positive) * len(negative)), 3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report", type=Path)
    ap.add_argument("--model", type=Path, default=MODEL)
    args = ap.parse_args()

    import numpy as np
    from llama_cpp import Llama

    report = json.loads(args.report.read_text())
    answered = {q["run_id"]: q for q in report["questions"] if q["outcome"] == "answered"}
    evidence: dict[str, list[EvidenceMessage]] = {}
    for line in (args.report.parent / "drafts.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["draft"]["run_id"] in answered:
            evidence[record["draft"]["run_id"]] = [EvidenceMessage.model_validate(m) for m in record["evidence"].values()]

    llm = Llama(str(args.model), n_ctx=4096, n_threads=2, n_threads_batch=2, verbose=False)
    vocab = llm.n_vocab()
    first = {t: llm.detokenize([t]).decode("utf-8", "ignore").lstrip()[:1] for t in range(vocab)}
    close = [t for t, c in first.items() if c == "]"]
    open_ = [t for t, c in first.items() if c == "{"]
    texts = prompts.prompt_settings()

    rows = []
    for run_id, q in answered.items():
        if run_id not in evidence:
            continue
        shown = P.build(q["question"], evidence[run_id])
        tokens = llm.tokenize(_chat(prompts.answer_messages(texts, q["question"], shown, Fence.new())).encode(),
                              add_bos=False, special=True)
        llm.reset()
        llm.eval(tokens)
        logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(vocab,)).astype(np.float64)
        weights = np.exp(logits - logits.max())
        p_close, p_open = float(weights[close].sum()), float(weights[open_].sum())
        kind = "must-not" if q["kind"] in MUST_NOT else "right" if q["answered_right"] else "wrong"
        rows.append({"id": q["id"], "kind": kind, "p_empty": round(p_close / (p_close + p_open), 4)})
        print(f"{q['id'][:48]:48} {kind:8} {rows[-1]['p_empty']:.3f}", flush=True)

    def of(kind: str) -> list[float]:
        return [r["p_empty"] for r in rows if r["kind"] == kind]

    print("\nthreshold  turned away: must-not  wrong  right")
    counts = {}
    for t in THRESHOLDS:
        counts[t] = {k: sum(p >= t for p in of(k)) for k in ("must-not", "wrong", "right")}
        print(f"{t:9}  {counts[t]['must-not']:20}  {counts[t]['wrong']:5}  {counts[t]['right']:5}")
    summary = {
        "answered": len(rows), "right": len(of("right")), "wrong": len(of("wrong")), "must_not": len(of("must-not")),
        "auc_must_not_vs_right": _auc(of("must-not"), of("right")),
        "auc_wrong_vs_right": _auc(of("wrong"), of("right")),
        "turned_away": {str(t): c for t, c in counts.items()},
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
