"""Compare two verdict files of one report (``replay_verifier.py --verdicts``), sentence by
sentence: which sentences one verifier kept and the other removed, each counted as right
or wrong. A sentence is *right* when its question must be answered and it cites a
supporting message, *wrong* otherwise (a question that must not be answered, or a
citation of none of the supporting messages). A rule pays on a set when it removes more
wrong sentences than right ones there. Run from the repository root:

    .venv/bin/python evals/compare_verdicts.py evals/real/dev.yaml BEFORE.jsonl AFTER.jsonl [-v]
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from pmsearch.cli.evaluation.corpus import set_corpus
from pmsearch.cli.evaluation.questions import Question, corpus_message_ids, load_questions, resolve_supporting
from pmsearch.shared.settings import cli_settings


def _kept(path: Path) -> dict[tuple[str, str], dict[str, list[str]]]:
    """(question id, strategy) -> kept sentence text -> its citations."""
    out = {}
    for line in path.read_text().splitlines():
        verdict = json.loads(line)
        out[(verdict["id"], verdict["strategy"])] = {text: cited for text, cited in verdict["kept"]}
    return out


def right(question: Question, cited: list[str]) -> bool:
    return question.kind == "answerable" and bool(set(cited) & question.supporting_ids())


def main(set_path: str, before: str, after: str, verbose: bool = False) -> None:
    questions = {q.id: q for q in load_questions(Path(set_path))}
    corpus = set_corpus(Path(set_path)) or cli_settings().demo_dir
    resolve_supporting(questions.values(), corpus_message_ids(corpus))
    old, new = _kept(Path(before)), _kept(Path(after))
    counts: Counter[str] = Counter()
    for key in sorted(old.keys() & new.keys()):
        question = questions.get(key[0])
        if question is None:
            continue
        for label, gone in (("removed", old[key].keys() - new[key].keys()), ("added", new[key].keys() - old[key].keys())):
            source = old[key] if label == "removed" else new[key]
            for text in sorted(gone):
                verdict = "right" if right(question, source[text]) else "wrong"
                counts[f"{label} {verdict}"] += 1
                if verbose:
                    print(f"{label:7} {verdict:5} {key[0]:34} {text[:110]}")
    print(json.dumps({k: counts[k] for k in ("removed right", "removed wrong", "added right", "added wrong")}))


if __name__ == "__main__":
    main(*sys.argv[1:4], verbose="-v" in sys.argv[4:])
