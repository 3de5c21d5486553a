"""The labelled sets in ``evals/``: the demo set agrees with the demo mail, and the quick
sample names only questions of it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pmsearch.cli.evaluation.command import question_ids
from pmsearch.cli.evaluation.questions import load_questions

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_set_agrees_with_the_demo_mail():
    run = subprocess.run([sys.executable, "evals/check_set.py"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


def test_the_quick_sample_names_24_answerable_and_8_must_not_answer_questions_of_the_demo_set():
    questions = {q.id: q for q in load_questions(ROOT / "evals/demo.yaml")}
    ids = question_ids(f"@{ROOT / 'evals/quick.txt'}")
    assert len(ids) == len(set(ids)) == 32
    assert set(ids) <= set(questions)
    assert sum(questions[i].answerable for i in ids) == 24


def test_both_halves_of_the_real_set_agree_with_the_real_mail():
    for half in ("evals/real/dev.yaml", "evals/real/test.yaml"):
        run = subprocess.run([sys.executable, "evals/check_set.py", half], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


def test_the_real_set_halves_are_as_split():
    run = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=ROOT / "evals/real", capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_no_question_is_in_both_halves_of_the_real_set():
    dev = {q.id for q in load_questions(ROOT / "evals/real/dev.yaml")}
    test = {q.id for q in load_questions(ROOT / "evals/real/test.yaml")}
    assert dev and test and not dev & test
