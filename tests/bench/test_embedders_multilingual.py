"""The multilingual embedder comparison's own arithmetic: rank fusion and the shares of
questions per language and half."""

from __future__ import annotations

from bench.embedders_multilingual import fuse, shares
from pmsearch.cli.evaluation.questions import Question


def _q(qid: str, tags: list[str]) -> Question:
    q = Question(id=qid, key="fr/alice", kind="answerable", question="?", facts=[["x"]], supporting=["m"], tags=tags)
    q._resolved = frozenset({f"hit-{qid}"})
    return q


def test_fusion_favours_what_several_lists_rank_high():
    assert fuse(["a", "b", "c"], ["b", "a"], ["b"]) == ["b", "a", "c"]
    assert fuse([], ["x"]) == ["x"]


def test_shares_count_a_question_once_per_language_and_half():
    asked = [("dev", _q("one", ["french"])), ("test", _q("two", ["german"])), ("test", _q("three", []))]
    found = [["other", "hit-one"], ["hit-two"], ["nothing"] * 12 + ["hit-three"]]
    got = shares(found, asked)
    assert got["all"] == {"hit": 2, "n": 3, "share": 0.667, "mrr": 0.5}
    assert (got["fr"]["mrr"], got["de"]["mrr"], got["en"]["hit"]) == (0.5, 1.0, 0)  # past the top 10 is a miss
    assert (got["dev"]["n"], got["test"]["hit"]) == (1, 1)
