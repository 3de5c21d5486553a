"""Calibrate the verifier's ``unsupported_claim`` threshold on an evaluation run.

For every draft sentence of the runs in a ``pmsearch eval`` report (kept beside the
report, with the citations it was checked against), compute the share
of its content words that its cited messages do not hold, and label it: ``right`` when
its question is answerable and the sentence states one of the question's key facts,
``wrong`` when its question must not be answered, ``other`` otherwise. Then print, per
threshold, how many wrong sentences the check removes and how many right ones it takes
with them. Run from the repository root:

    .venv/bin/python evals/calibrate_unsupported.py var/eval/<stamp>/report.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pmsearch.cli.evaluation.drafts import admin_client, for_report
from pmsearch.cli.evaluation.questions import load_questions
from pmsearch.cli.evaluation.scoring import contains
from pmsearch.services.verifier.rules import MIN_CONTENT_WORDS
from pmsearch.services.verifier.support import unsupported_words
from pmsearch.shared.messages import EvidenceMessage
from pmsearch.shared.settings import cli_settings

THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def _texts(m: EvidenceMessage) -> list[str]:
    return [m.body, m.subject, m.sender, *(a.text for a in m.attachments)]


def main(report_path: str) -> None:
    report = json.loads(Path(report_path).read_text())
    questions = {q.id: q for q in load_questions(Path(report["meta"]["set"]))}
    settings = cli_settings()
    drafts = for_report(Path(report_path), admin_client(settings.var_dir, settings.redis_port))
    rows: list[tuple[str, float, int, str]] = []
    for rec in report["questions"]:
        kept = drafts.get(rec.get("run_id") or "")
        q = questions.get(rec["id"])
        if kept is None or q is None or not (kept[0].draft and kept[0].draft.sentences):
            continue
        draft, evidence = kept
        for s in draft.draft.sentences:
            sources = [t for mid in s.citations if mid in evidence for t in _texts(evidence[mid])]
            missing, total = unsupported_words(s.text, sources)
            if q.answerable:
                label = "right" if any(contains(s.text, spelling) for fact in q.facts for spelling in fact) else "other"
            else:
                label = "wrong"
            rows.append((label, len(missing) / total if total else 0.0, total, s.text))
    print(f"{len(rows)} draft sentences: " + ", ".join(f"{k} {sum(1 for r in rows if r[0] == k)}" for k in ("right", "wrong", "other")))
    print("| threshold | wrong removed | right removed | other removed |")
    print("|---|---|---|---|")
    for t in THRESHOLDS:
        cut = [r for r in rows if r[2] >= MIN_CONTENT_WORDS and r[1] > t]
        counts = {k: sum(1 for r in cut if r[0] == k) for k in ("wrong", "right", "other")}
        print(f"| {t} | {counts['wrong']} | {counts['right']} | {counts['other']} |")
    for label, ratio, total, text in sorted(rows, key=lambda r: -r[1])[:15]:
        print(f"{label:5} {ratio:.2f} ({total}) {text[:110]}")


if __name__ == "__main__":
    main(sys.argv[1])
