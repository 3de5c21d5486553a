"""What an abstention rule on the extract style's choice would do, counted on an
evaluation run: the answer attempt's trace note records how much of the question's
weighted words the chosen sentences hold, alone and with their passages
(pmsearch/shared/extracts.py). For each threshold on each signal, the answered runs it
would turn away are counted as right answers lost, wrong answers of answerable questions
removed, and answers to questions that must not be answered removed. Decide on a ``dev``
half; a ``test`` half is only scored. A run turned away would have had a search round in
a live run, so these counts bound what the rule does; they are no result of it. Run
from the repository root:

    .venv/bin/python evals/abstention_signals.py var/eval/<stamp>/report.json [more reports ...]

Prints a table per report and signal and, last, one JSON line.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

# "answer: chose S2, S3 (coverage 0.42, with passages 0.71)"
_NOTE = re.compile(r"chose [S\d, ]+\(coverage ([\d.]+), with passages ([\d.]+)\)")
THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
SIGNALS = ("sentences", "passages")


def _signals(run: dict) -> tuple[float, float] | None:
    """The last choice's coverage in a run's trace, None when it chose nothing."""
    found = None
    for step in (run or {}).get("trace", {}).get("steps", []):
        m = _NOTE.search(step.get("note") or "")
        if m:
            found = (float(m.group(1)), float(m.group(2)))
    return found


def rows(report: dict) -> list[dict]:
    """One row per answered run with its signals: right, wrong (answerable, not right) or
    must-not (a question that must not be answered)."""
    out = []
    for q in report["questions"]:
        if q["outcome"] != "answered" or (signals := _signals(q.get("run"))) is None:
            continue
        kind = "right" if q["answered_right"] else "must_not" if q["wrongly_answered"] else "wrong"
        out.append({"id": q["id"], "kind": kind, "sentences": signals[0], "passages": signals[1]})
    return out


def table(answered: list[dict], signal: str) -> list[dict]:
    out = []
    for t in THRESHOLDS:
        away = [r for r in answered if r[signal] < t]
        out.append({
            "signal": signal, "below": t,
            "right_lost": sum(r["kind"] == "right" for r in away),
            "wrong_removed": sum(r["kind"] == "wrong" for r in away),
            "must_not_removed": sum(r["kind"] == "must_not" for r in away),
        })
    return out


def main(paths: list[str]) -> None:
    summary = {}
    for path in paths:
        report = json.loads(Path(path).read_text())
        answered = rows(report)
        counts = {k: sum(r["kind"] == k for r in answered) for k in ("right", "wrong", "must_not")}
        print(f"\n{report['meta']['set']} ({path}): answered {len(answered)}: {counts}")
        summary[path] = {"answered": counts, "tables": []}
        for signal in SIGNALS:
            print(f"\n| {signal} below | right lost | wrong removed | must-not removed |\n|---|---|---|---|")
            for row in table(answered, signal):
                print(f"| {row['below']:.1f} | {row['right_lost']} | {row['wrong_removed']} | {row['must_not_removed']} |")
                summary[path]["tables"].append(row)
    print(json.dumps(summary))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: evals/abstention_signals.py REPORT.json [REPORT.json ...]")
    main(sys.argv[1:])
