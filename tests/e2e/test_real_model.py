"""Agentic search with the real embedded model (Qwen2.5-Coder-1.5B on llama.cpp's
server), every service its own process. Slow: about a minute a question."""

from __future__ import annotations

import pytest
from rich.console import Console

from cli.demo import load_demo
from cli.stack import ROOT, Stack
from shared.llm.local_server import DEFAULT_MODEL
from tests.fixtures.stack import DEMO, Api

pytestmark = pytest.mark.real_model

ANSWERABLE = [
    ("acme/alice", "Did the insurer accept the Golf claim after we sent the photos?"),
    ("acme/alice", "Who is handling the Golf claim at the insurer?"),
    ("acme/alice", "Where does Spedition Hüber pick up from April?"),
    ("globex/carol", "What did Harbor Mutual decide on the Transit hail claim?"),
]
UNANSWERABLE = ("acme/alice", "What is the budget of our moon base?")


@pytest.fixture(scope="module")
def real_api(tmp_path_factory):
    if not (ROOT / DEFAULT_MODEL).is_file():
        pytest.fail("the embedded model is missing: scripts/install_model.sh installs it (make test runs it)")
    stack = Stack(tmp_path_factory.mktemp("real"), local_model=True)
    try:
        stack.start()
        stack.demo_keys = load_demo(stack, DEMO, Console(quiet=True))
        yield Api(stack)
    finally:
        stack.stop()


def ask(api: Api, label: str, question: str) -> dict:
    resp = api.search(api.key(label), query=question, mode="agentic")
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_real_model_answers_demo_questions_with_verified_citations(real_api):
    results = [ask(real_api, label, q) for label, q in ANSWERABLE]
    answered = [r for r in results if r["outcome"] == "answered"]
    summary = [(r["question"], r["outcome"], r.get("reason")) for r in results]
    assert len(answered) >= 3, summary
    for r in answered:
        evidence = {e["message_id"] for e in r["evidence"]}
        assert r["answer"]["sentences"]
        for sentence in r["answer"]["sentences"]:
            assert sentence["citations"]
            for c in sentence["citations"]:
                assert c["message_id"] in evidence
                assert c["excerpt"]["text"]
        assert r["usage"]["model_calls"] >= 2 and r["usage"]["prompt_tokens"] > 0


def test_real_model_does_not_answer_an_unanswerable_question(real_api):
    result = ask(real_api, *UNANSWERABLE)
    assert result["outcome"] != "answered", result["answer"]
    assert result["trace"]["searched"]
