"""A question set that brings its own mail: where its mail is, and the keys it is asked with."""

from __future__ import annotations

from pathlib import Path

import pytest

from pmsearch.cli.evaluation.command import EvalOptions, eval_target
from pmsearch.cli.evaluation.corpus import corpus_keys, set_corpus
from pmsearch.cli.evaluation.questions import EvalInputError, load_questions
from pmsearch.shared.settings import CliSettings

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "evals" / "real"


def test_a_set_beside_a_mail_folder_brings_its_own_mail(tmp_path):
    (tmp_path / "mail" / "t" / "box" / "INBOX").mkdir(parents=True)
    assert set_corpus(tmp_path / "dev.yaml") == tmp_path / "mail"


def test_the_demo_set_brings_no_mail():
    assert set_corpus(ROOT / "evals" / "demo.yaml") is None


def test_each_mailbox_gets_a_key_that_sees_it_alone(tmp_path):
    for tenant, box in (("lists", "kernel"), ("lists", "docs"), ("corp", "allen"), ("corp", "_skipped")):
        (tmp_path / tenant / box / "INBOX").mkdir(parents=True)
    assert corpus_keys(tmp_path) == {
        "corp/allen": {"tenant_id": "corp", "principal": "allen@corp.example", "mailboxes": ["allen"]},
        "lists/docs": {"tenant_id": "lists", "principal": "docs@lists.example", "mailboxes": ["docs"]},
        "lists/kernel": {"tenant_id": "lists", "principal": "kernel@lists.example", "mailboxes": ["kernel"]},
    }


def test_every_real_set_question_is_asked_with_a_key_of_the_real_mail():
    labels = set(corpus_keys(REAL / "mail"))
    for half in ("dev.yaml", "test.yaml"):
        questions = load_questions(REAL / half)
        assert {q.key for q in questions} <= labels


def test_a_set_with_its_own_mail_is_refused_against_a_running_stack():
    opts = EvalOptions(set_path=REAL / "dev.yaml")
    with pytest.raises(EvalInputError, match="--start"):
        with eval_target(opts, CliSettings(), None):  # type: ignore[arg-type]
            pass
