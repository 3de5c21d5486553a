"""Every process of the stack logs JSON lines naming the run they handle, and never a
secret or the mail a run read (pmsearch/shared/logging_setup.py), during a scripted-model run."""

from __future__ import annotations

import json
import time

import pytest

from pmsearch.testing.brains import honest

QUESTION = "Did the insurer accept the Golf claim after we sent the photos?"
STAGES = ("planner", "searcher", "answerer", "verifier")


def json_lines(stack, name: str) -> list[dict]:
    text = (stack.log_dir / f"{name}.log").read_text(errors="replace")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def answered_run(api, stack_model, demo_stack):
    api.tenant("acme", **{"search.agentic_max_steps": 4, "search.agentic_max_seconds": 20,
                          "search.agentic_daily_cap": 500})
    stack_model.reset()
    stack_model.set_script(honest())
    resp = api.search(api.key("acme/alice"), query=QUESTION, mode="agentic")
    assert resp.status_code == 200, resp.text
    result = resp.json()
    assert result["outcome"] == "answered"
    # The verifier logs its handling line just after it stored the result.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if any(line.get("run_id") == result["run_id"] and line["message"] == "handled"
               for line in json_lines(demo_stack, "verifier")):
            break
        time.sleep(0.2)
    return result


@pytest.mark.parametrize("stage", STAGES)
def test_a_stage_logs_its_handling_of_the_run_as_json_with_run_id_and_duration(demo_stack, answered_run, stage):
    lines = json_lines(demo_stack, stage)  # every line parses: nothing but JSON is written
    handled = [line for line in lines if line.get("run_id") == answered_run["run_id"] and line["message"] == "handled"]
    assert handled, f"no handling line of {stage} names the run"
    for line in handled:
        assert (line["service"], line["stage"], line["tenant"]) == (stage, stage, "acme")
        assert line["duration_ms"] >= 0 and line["level"] == "INFO"


def test_the_gateway_logs_the_request_that_started_the_run(demo_stack, answered_run):
    lines = json_lines(demo_stack, "gateway")
    run_id = answered_run["run_id"]
    [started] = [line for line in lines if line.get("run_id") == run_id and line["message"] == "request"]
    assert (started["method"], started["route"], started["status"]) == ("POST", "/v1/search", 200)
    assert started["tenant"] == "acme" and started["duration_ms"] > 0


def test_no_log_holds_a_secret_an_api_key_the_question_or_mail_text(demo_stack, api, answered_run):
    logs = "".join((demo_stack.log_dir / f"{name}.log").read_text(errors="replace") for name in (*STAGES, "gateway"))
    secrets = [demo_stack.secrets.scope_key, demo_stack.secrets.admin_token, *demo_stack.secrets.passwords.values(),
               api.key("acme/alice")]
    assert not [s for s in secrets if s in logs]
    assert QUESTION not in logs
    excerpts = [c["excerpt"]["text"] for s in answered_run["answer"]["sentences"] for c in s["citations"]]
    sentences = [s["text"] for s in answered_run["answer"]["sentences"]]
    assert excerpts and sentences
    assert not [t for t in excerpts + sentences if t in logs]
