"""Loading the labelled set: a bad file is refused with one line naming question and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pmsearch.cli.evaluation.questions import (
    EvalInputError,
    corpus_message_ids,
    load_questions,
    parse_questions,
    resolve_keys,
    resolve_supporting,
    select,
)
from pmsearch.services.searcher.ingest.schemas import legacy_message_key as message_key

FIXTURE = Path(__file__).with_name("eval_questions.yaml")
GOOD = {"id": "q1", "key": "acme/alice", "kind": "answerable", "question": "?", "facts": [["x"]]}


def test_fixture_set_loads():
    qs = load_questions(FIXTURE)
    assert [q.id for q in qs] == ["claim-accepted", "moon-budget", "bob-secret", "injected-wire"]
    claim = qs[0]
    assert claim.answerable and not qs[3].answerable  # injected without facts: must not answer
    # angle brackets are tolerated; ids map into the key's tenant
    expected = {message_key("acme", "accept-1@insurer.example"), message_key("acme", "photos-2@acme.example")}
    assert claim.supporting_ids() == expected


def test_supporting_ids_come_from_the_corpus_copies():
    from tests.fixtures.stack import DEMO

    corpus = corpus_message_ids(DEMO)
    rfc_id = "20240215172700.5376b4f7b8278bcd@acme.example"  # filed in INBOX and Archive
    [copy] = corpus[("acme", rfc_id)]  # one content, one id
    [q] = parse_questions([{**GOOD, "supporting": [rfc_id]}], "test")
    resolve_supporting([q], corpus)
    assert q.supporting_ids() == {copy, message_key("acme", rfc_id)}


@pytest.mark.parametrize(
    "change,message",
    [
        ({"colour": "red"}, "question 1 (q1): unknown field 'colour'"),
        ({"kind": "maybe"}, "question 1 (q1): kind: Input should be"),
        ({"facts": []}, "question 1 (q1): an answerable question needs facts"),
        ({"kind": "unanswerable"}, "question 1 (q1): a question of kind unanswerable must not have facts"),
        ({"facts": [[" "]]}, "question 1 (q1): facts: every fact needs at least one non-blank spelling"),
        ({"question": None}, "question 1 (q1): question: Input should be a valid string"),
        ({"key": "alice"}, "question 1 (q1): key: expected a key label like acme/alice, got 'alice'"),
    ],
)
def test_validation_errors_are_one_readable_line(change, message):
    with pytest.raises(EvalInputError) as exc:
        parse_questions([{**GOOD, **change}], "set.yaml")
    text = str(exc.value)
    assert text.startswith(f"set.yaml: {message}") and "\n" not in text


def test_missing_field_duplicate_id_and_wrong_shape():
    item = {k: v for k, v in GOOD.items() if k != "question"}
    with pytest.raises(EvalInputError, match=r"question 1 \(q1\): missing field 'question'"):
        parse_questions([item], "s")
    with pytest.raises(EvalInputError, match=r"question 2 \(q1\): duplicate id 'q1'"):
        parse_questions([GOOD, GOOD], "s")
    with pytest.raises(EvalInputError, match="expected a non-empty YAML list"):
        parse_questions({"id": "q1"}, "s")
    with pytest.raises(EvalInputError, match="question 1: expected a mapping"):
        parse_questions(["just text"], "s")


def test_a_fact_may_be_one_plain_string():
    (q,) = parse_questions([{**GOOD, "facts": ["accept", ["2,115.50", "2115.50"]]}], "s")
    assert q.facts == [["accept"], ["2,115.50", "2115.50"]]


def test_file_errors(tmp_path):
    with pytest.raises(EvalInputError, match="no question set at"):
        load_questions(tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("- id: a\n  key: [unclosed\n")
    with pytest.raises(EvalInputError, match=r"bad.yaml: invalid YAML at line \d+"):
        load_questions(bad)


def test_select_by_id_kind_and_limit():
    qs = load_questions(FIXTURE)
    assert [q.id for q in select(qs, [], ["unanswerable", "injected"], None)] == ["moon-budget", "injected-wire"]
    assert [q.id for q in select(qs, ["bob-secret", "claim-accepted"], [], None)] == ["claim-accepted", "bob-secret"]
    assert len(select(qs, [], [], 2)) == 2
    with pytest.raises(EvalInputError, match="unknown kind sometimes"):
        select(qs, [], ["sometimes"], None)
    with pytest.raises(EvalInputError, match="no question with id nope"):
        select(qs, ["nope"], [], None)
    with pytest.raises(EvalInputError, match="no question matches"):
        select(qs, ["bob-secret"], ["answerable"], None)


def test_resolve_keys(tmp_path):
    qs = load_questions(FIXTURE)
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"acme/alice": "pk_a", "acme/bob": "pk_b", "globex/carol": "pk_c", "x/y": "pk_x"}))
    assert resolve_keys(qs, keys) == {"acme/alice": "pk_a", "acme/bob": "pk_b", "globex/carol": "pk_c"}
    keys.write_text(json.dumps({"acme/alice": "pk_a"}))
    with pytest.raises(EvalInputError, match=r"question bob-secret: unknown key label 'acme/bob' \(known in .*: acme/alice\)"):
        resolve_keys(qs, keys)
    with pytest.raises(EvalInputError, match="no keys file at"):
        resolve_keys(qs, tmp_path / "missing.json")
