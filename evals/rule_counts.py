"""What each verifier rule removes on an evaluation run's recorded drafts, counted as right
or wrong sentences: the drafts are verified once with every rule and once without each
rule in turn; the sentences kept only without a rule are the ones it alone removes. A
sentence is *right* when its question must be answered and it cites a supporting
message, *wrong* otherwise (see evals/compare_verdicts.py). A rule pays on a set when it
removes more wrong sentences than right ones. Run from the repository root:

    .venv/bin/python evals/rule_counts.py var/eval/<stamp>/report.json [more reports ...] [--switch-off NAME,...]

Prints a table per report and, last, one JSON line. The drafts are the answerer's as
recorded (no ``--answerer`` re-run): a rule of the verifier is measured on its input.
``--switch-off`` leaves out mechanisms for every count, as ``evals/replay_verifier.py``
does (``fallback,unaligned`` counts a ``write_or_extract`` run's drafts as ``write``).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections import Counter
from pathlib import Path

from pmsearch.cli.evaluation.corpus import set_corpus
from pmsearch.cli.evaluation.drafts import admin_client, for_report
from pmsearch.cli.evaluation.questions import Question, corpus_message_ids, load_questions, resolve_supporting
from pmsearch.services.verifier import rules, service
from pmsearch.services.verifier.decide import decide
from pmsearch.services.verifier.question import Pinned
from pmsearch.shared.settings import cli_settings

# The rules of the answer as a whole, switched off by name (pmsearch/services/verifier/service.py).
ANSWER_RULES = ("answer_removed", "asked_figure_missing", "contradictory")
# The checks one rule is made of, switched off one at a time: the rules module's name for
# each, and what stands in for it.
PARTS = {
    "off_question: what the question pins": ("off_question", lambda *a, **k: None),
    "off_question: the question's words off the thread": ("off_topic", lambda *a, **k: None),
    "off_question: the question's words nowhere the claim comes from": ("borrowed_subject", lambda *a, **k: None),
    "figure_not_found: a table's figure off the row it names": ("off_its_row", lambda *a, **k: False),
}
# What the question pins (pmsearch/services/verifier/question.py), each cleared in turn: the field
# of ``Pinned`` and its empty value.
PINS = {
    f.name: f.default for f in dataclasses.fields(Pinned) if f.name != "words"
}


def _kept(report: dict, questions: dict[str, Question], drafts) -> dict[tuple[str, str], dict[str, list[str]]]:
    out = {}
    for rec in report["questions"]:
        kept = drafts.get(rec.get("run_id") or "")
        if rec["id"] not in questions or kept is None:
            continue
        draft, evidence = kept
        result = decide(draft, evidence, now=draft.usage.seconds)
        sentences = result.answer.sentences if result.answer else []
        out[(rec["id"], rec["strategy"])] = {s.text: [c.message_id for c in s.citations] for s in sentences}
    return out


def _right(question: Question, cited: list[str]) -> bool:
    return question.kind == "answerable" and bool(set(cited) & question.supporting_ids())


SWITCHED_OFF: frozenset[str] = frozenset()


def counts_for(report_path: Path) -> dict[str, dict[str, int]]:
    report = json.loads(report_path.read_text())
    set_path = Path(report["meta"]["set"])
    questions = {q.id: q for q in load_questions(set_path)}
    settings = cli_settings()
    corpus = set_corpus(set_path) or settings.demo_dir
    resolve_supporting(questions.values(), corpus_message_ids(corpus))
    drafts = for_report(report_path, admin_client(settings.var_dir, settings.redis_port))
    service.SWITCHED_OFF = SWITCHED_OFF
    full = _kept(report, questions, drafts)
    out: dict[str, dict[str, int]] = {}
    all_rules = rules.RULES
    for name in [rules.REASON_OF[r] for r in all_rules] + list(ANSWER_RULES):
        if name in ("empty_sentence", "malformed", "no_citation", "unknown_citation"):
            continue  # what the verifier promises, not a judgement to measure
        rules.RULES = tuple(r for r in all_rules if rules.REASON_OF[r] != name)
        service.SWITCHED_OFF = SWITCHED_OFF | (frozenset({name}) & frozenset(ANSWER_RULES))
        try:
            without = _kept(report, questions, drafts)
        finally:
            rules.RULES, service.SWITCHED_OFF = all_rules, SWITCHED_OFF
        out[name] = _tally(questions, full, without)
    for name, (attribute, stand_in) in PARTS.items():
        original = getattr(rules, attribute)
        setattr(rules, attribute, stand_in)
        try:
            out[name] = _tally(questions, full, _kept(report, questions, drafts))
        finally:
            setattr(rules, attribute, original)
    pinned = service.pinned
    for field, empty in PINS.items():
        service.pinned = lambda question, field=field, empty=empty: dataclasses.replace(
            pinned(question), **{field: empty}
        )
        try:
            out[f"pin: {field}"] = _tally(questions, full, _kept(report, questions, drafts))
        finally:
            service.pinned = pinned
    return out


def _tally(questions: dict[str, Question], full: dict, without: dict) -> dict[str, int]:
    tally: Counter[str] = Counter()
    for key, kept in without.items():
        for text in kept.keys() - full.get(key, {}).keys():
            tally["right" if _right(questions[key[0]], kept[text]) else "wrong"] += 1
    return {"removes_right": tally["right"], "removes_wrong": tally["wrong"]}


def main(paths: list[str]) -> None:
    everything = {}
    for path in paths:
        counts = counts_for(Path(path))
        everything[path] = counts
        print(f"{path}\n| rule | removes right | removes wrong | pays |\n|---|---|---|---|")
        for name, c in counts.items():
            pays = "yes" if c["removes_wrong"] > c["removes_right"] else ("no effect" if not any(c.values()) else "no")
            print(f"| {name} | {c['removes_right']} | {c['removes_wrong']} | {pays} |")
    print(json.dumps(everything))


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--switch-off" in args:
        at = args.index("--switch-off")
        SWITCHED_OFF = frozenset(args[at + 1].split(","))
        del args[at : at + 2]
    main(args)
