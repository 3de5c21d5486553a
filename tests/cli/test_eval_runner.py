"""The HTTP/SSE side against a stand-in gateway: timings, the stored result, errors."""

from __future__ import annotations

import asyncio

import pytest

from pmsearch.cli.evaluation.questions import Question
from pmsearch.cli.evaluation.runner import run_all
from tests.cli.eval_fake_gateway import DONE_AFTER, EVIDENCE_AFTER, FakeGateway


def q(id: str, text: str) -> Question:
    return Question(id=id, key="acme/alice", kind="answerable", question=text, facts=[["x"]])


@pytest.fixture(scope="module")
def gateway():
    with FakeGateway() as gw:
        yield gw


def test_times_the_stream_takes_the_stored_result_and_records_failures(gateway):
    gateway.answers["ok?"] = {"outcome": "answered", "answer": {"text": "Yes.", "sentences": []}}
    questions = [q("ok", "ok?"), q("boom", "boom"), q("slow", "slow")]
    seen = []
    records = asyncio.run(
        run_all(gateway.url, questions, {"acme/alice": "pk_alice"}, ("loop", "single_shot"), timeout=2.0, on_record=seen.append)
    )
    assert [(r.strategy, r.question_id) for r in records] == [
        (s, i) for s in ("loop", "single_shot") for i in ("ok", "boom", "slow")
    ]
    assert len(seen) == 6

    ok = records[0]
    assert ok.outcome == "answered" and ok.result["answer"]["text"] == "Yes."  # from GET /v1/runs/{id}, not "done"
    assert ok.run_id == ok.result["run_id"]
    assert EVIDENCE_AFTER <= ok.first_evidence_seconds < ok.wall_seconds
    assert DONE_AFTER <= ok.wall_seconds < DONE_AFTER + 1.5
    assert ok.events == {"step": 1, "evidence": 1, "answer": 1, "done": 1}

    boom = records[1]
    assert boom.outcome == "error" and boom.result is None
    assert boom.error == "HTTP 500 Internal Server Error: kaputt"

    slow = records[2]
    assert slow.outcome == "error" and slow.error == "timed out after 2 s"

    bodies = [r["body"] for r in gateway.requests]
    assert {"query": "ok?", "mode": "agentic", "strategy": "single_shot"} in bodies
    assert {"query": "ok?", "mode": "agentic", "strategy": "loop"} in bodies
    assert all(r["auth"] == "Bearer pk_alice" and r["accept"] == "text/event-stream" for r in gateway.requests)


def test_an_unreachable_gateway_is_an_error_record():
    from pmsearch.cli.stack import free_port

    (record,) = asyncio.run(run_all(f"http://127.0.0.1:{free_port()}", [q("ok", "ok?")], {"acme/alice": "k"}, timeout=5))
    assert record.outcome == "error" and record.error.startswith("ConnectError")
