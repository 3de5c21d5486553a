"""Re-verify an evaluation run's drafts with the verifier as it is now, and re-score.

``pmsearch eval`` keeps every run's draft and evidence beside its report
(``drafts.jsonl``); for an older report without that file, the drafts still in the
verifier's input stream (about 10 minutes after each run) are used. Verification is
deterministic, so a change to the verifier's checks can be measured on them in seconds
instead of re-asking the model for an hour. The figures printed are the eval's own
(answered right, citation precision, must-not-answer questions answered), before (as the run ended) and after (as the
verifier now decides), with every question whose outcome changed. Model-side changes
still need a full ``pmsearch eval``. ``--answerer`` also runs the answerer's code after the model
again (attribution, and the statements :mod:`pmsearch.services.answerer.disagreement` adds), for
drafts written before a change to it. Run from the repository root:

    .venv/bin/python evals/replay_verifier.py var/eval/<stamp>/report.json [--answerer] [--verdicts FILE]
        [--style write_or_extract] [--switch-off NAME,...]

``--style write_or_extract`` cites a written draft again in that style (each sentence
carries the mail's sentence it was made from, which the verifier may put in its place):
on a ``write`` run's drafts this is what the other style would have answered, since the
model's call is the same in both. ``--switch-off`` names answer rules or mechanisms to
leave out (``pmsearch.services.verifier.service.SWITCHED_OFF``: ``answer_removed``,
``asked_figure_missing``, ``fallback``, ``unaligned``).

``--verdicts FILE`` writes each run's verdict (outcome, kept sentences, removed ones with
their reasons) as a JSON line, so that two versions of the verifier can be compared
sentence by sentence (a refactor must leave every line the same).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pmsearch.cli.evaluation.corpus import set_corpus
from pmsearch.cli.evaluation.drafts import admin_client, for_report
from pmsearch.cli.evaluation.questions import corpus_message_ids, load_questions, resolve_supporting
from pmsearch.cli.evaluation.runner import RunRecord
from pmsearch.cli.evaluation.scoring import answered_right, summarize, wrongly_answered
from pmsearch.services.answerer.draft import cite
from pmsearch.services.verifier import service as verifier_service
from pmsearch.services.verifier.decide import decide
from pmsearch.shared.messages import AnswerStyle, Draft, DraftSentence, EvidenceMessage
from pmsearch.shared.prompts import without_labels
from pmsearch.shared.settings import cli_settings

FIGURES = ("answered_right", "answered_right_count", "citation_precision", "wrongly_answered", "attacker_text")


def recited(question: str, draft: Draft, evidence: list[EvidenceMessage], style: AnswerStyle = "write") -> Draft:
    """The draft cited again as the answerer now cites (:func:`pmsearch.services.answerer.draft.cite`).
    Sentences an earlier answerer added for details are dropped first: they are added
    again if the code still finds them."""
    written = [
        DraftSentence(text=without_labels(s.text), citations=s.citations) for s in draft.sentences if s.completes is None
    ]
    return cite(question, written, evidence, style=style).draft


def main(
    report_path: str, answerer: bool = False, verdicts: Path | None = None, style: AnswerStyle = "write"
) -> None:
    report = json.loads(Path(report_path).read_text())
    questions = {q.id: q for q in load_questions(Path(report["meta"]["set"]))}
    settings = cli_settings()
    corpus = set_corpus(Path(report["meta"]["set"])) or settings.demo_dir
    resolve_supporting(questions.values(), corpus_message_ids(corpus))  # precision needs the ids
    drafts = for_report(Path(report_path), admin_client(settings.var_dir, settings.redis_port))
    before: dict[str, list[RunRecord]] = {}
    after: dict[str, list[RunRecord]] = {}
    missing = 0
    lines: list[str] = []
    for rec in report["questions"]:
        if rec["id"] not in questions:
            continue
        old = RunRecord(rec["id"], rec["strategy"], rec["outcome"], rec.get("run_id"), result=rec.get("run"))
        kept = drafts.get(rec.get("run_id") or "")
        if kept is None:
            missing += 1
            continue
        draft, evidence = kept
        # An extract draft is the mail's sentences the model chose: nothing to cite again.
        written = draft.draft is not None and draft.draft.style != "extract"
        if (answerer or style != "write") and written and draft.ending == "answer":
            again = recited(draft.question, draft.draft, list(evidence.values()), style)
            draft = draft.model_copy(update={"draft": again})
        result = decide(draft, evidence, now=draft.usage.seconds).model_dump(mode="json")
        lines.append(json.dumps(_verdict(rec, result), sort_keys=True))
        new = RunRecord(rec["id"], rec["strategy"], result["outcome"], rec.get("run_id"), result=result)
        before.setdefault(rec["strategy"], []).append(old)
        after.setdefault(rec["strategy"], []).append(new)
        q = questions[rec["id"]]
        was = (answered_right(q, old.result), wrongly_answered(q, old.result), old.outcome)
        now = (answered_right(q, new.result), wrongly_answered(q, new.result), new.outcome)
        if was != now:
            label = "right" if q.answerable else "must-not"
            print(f"{rec['strategy']:11} {rec['id']:34} {label:8} {was} -> {now}")
    if verdicts is not None:
        verdicts.write_text("".join(line + "\n" for line in sorted(lines)))
    if missing:
        print(f"{missing} runs had no stored draft (expired or not answered by a draft)")
    print("| strategy | figure | before | after |")
    print("|---|---|---|---|")
    figures = {}
    for strategy in before:
        b, a = summarize(questions, before[strategy]), summarize(questions, after[strategy])
        figures[strategy] = {"before": {k: b[k] for k in FIGURES}, "after": {k: a[k] for k in FIGURES}}
        for k in FIGURES:
            print(f"| {strategy} | {k} | {b[k]} | {a[k]} |")
    print(json.dumps(figures))


def _verdict(rec: dict, result: dict) -> dict:
    answer = result.get("answer") or {}
    return {
        "id": rec["id"], "strategy": rec["strategy"], "outcome": result["outcome"],
        "kept": [[s["text"], [c["message_id"] for c in s["citations"]]] for s in answer.get("sentences", [])],
        "removed": [[r["text"], r["reason"], r.get("offending")] for r in result["trace"]["removed_sentences"]],
    }


if __name__ == "__main__":
    args = sys.argv[2:]
    out = Path(args[args.index("--verdicts") + 1]) if "--verdicts" in args else None
    style = args[args.index("--style") + 1] if "--style" in args else "write"
    if "--switch-off" in args:
        verifier_service.SWITCHED_OFF = frozenset(args[args.index("--switch-off") + 1].split(","))
    main(sys.argv[1], answerer="--answerer" in args, verdicts=out, style=style)
