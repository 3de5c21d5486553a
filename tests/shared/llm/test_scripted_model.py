"""The scripted model server itself: rule matching, templating, and running as its own
process for end-to-end tests."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from pmsearch.testing.scripted_model import Reply, ScriptedModel

ROOT = Path(__file__).resolve().parents[3]


def chat(base_url: str, body: dict) -> httpx.Response:
    return httpx.post(f"{base_url}/chat/completions", json=body, timeout=5)


def body(schema_title: str, user: str, **extra) -> dict:
    return {
        "model": "m",
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": user}],
        "response_format": {"type": "json_object", "schema": {"title": schema_title}},
        **extra,
    }


SCRIPT = {
    "rules": [
        {"match": {"schema_name": "Plan"}, "reply": {"object": {"calls": []}}, "times": 1},
        {
            "match": {"schema_name": "Draft", "last_user": r"id=(?P<mid>\S+)"},
            "reply": {"content": '{"cite": "{{mid}}"}'},
        },
    ],
    "default": {"status": 503, "error": "nothing scripted"},
}


def test_rules_match_by_schema_and_regex_with_templates(scripted_model: ScriptedModel):
    scripted_model.set_script(SCRIPT)
    url = scripted_model.base_url
    plan = chat(url, body("Plan", "q")).json()
    assert json.loads(plan["choices"][0]["message"]["content"]) == {"calls": []}
    assert chat(url, body("Plan", "q")).status_code == 503  # times: 1 used up
    draft = chat(url, body("Draft", "evidence id=<m1@x> here")).json()
    assert json.loads(draft["choices"][0]["message"]["content"]) == {"cite": "<m1@x>"}
    named = dict(body("x", "q"), response_format={
        "type": "json_schema", "json_schema": {"name": "Plan", "schema": {}}})  # fmt: skip
    assert chat(url, named).status_code == 503  # Plan's rule was used up, whatever the dialect
    assert len(scripted_model.bodies) == 4 and httpx.get(f"{url}/models").status_code == 200


def test_tool_requests_get_tool_calls_and_callables_work(scripted_model: ScriptedModel):
    scripted_model.set_script(lambda b: Reply(content=json.dumps({"n": len(b["messages"])})))
    tools = {"tools": [{"type": "function", "function": {"name": "plan", "parameters": {}}}]}
    message = chat(scripted_model.base_url, body("x", "q", **tools)).json()["choices"][0]["message"]
    assert message["tool_calls"][0]["function"] == {"name": "plan", "arguments": '{"n": 2}'}


def test_runs_as_its_own_process(tmp_path: Path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": "first"}, {"status": 500}]))
    port_file = tmp_path / "port"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pmsearch.testing.scripted_model", "--port", "0",
         "--script", str(script), "--port-file", str(port_file)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        line = proc.stdout.readline()
        assert "listening on" in line
        base = line.rsplit(" ", 1)[1].strip()
        assert base.endswith(f":{port_file.read_text()}/v1")
        replies = [chat(base, body("x", "q")) for _ in range(3)]
        assert replies[0].json()["choices"][0]["message"]["content"] == "first"
        assert [r.status_code for r in replies] == [200, 500, 500]
        root = base.removesuffix("/v1")
        assert len(httpx.get(f"{root}/_scripted/requests").json()) == 3
        httpx.post(f"{root}/_scripted/script", json={"default": {"content": "again"}})
        httpx.post(f"{root}/_scripted/reset")
        assert chat(base, body("x", "q")).json()["choices"][0]["message"]["content"] == "again"
        assert len(httpx.get(f"{root}/_scripted/requests").json()) == 1
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


@pytest.mark.parametrize("bad", [{"rules": [{"reply": {"nonsense": 1}}]}, {"unknown": 1}])
def test_script_files_are_validated(bad):
    with pytest.raises(ValueError):
        ScriptedModel(bad)


def test_answers_on_a_kept_alive_connection_without_the_delayed_ack_stall(
    scripted_model: ScriptedModel,
):
    # With Nagle's algorithm on, every answer's body waited for the client's delayed ACK
    # of its headers: at least 40 ms a call (Linux's minimum), which benchmarks counted
    # as the service's overhead. A busy machine may make a few calls slow, not most.
    scripted_model.set_script(lambda request: Reply(content="{}"))
    took = []
    with httpx.Client(base_url=scripted_model.base_url, timeout=5) as client:
        for _ in range(12):
            started = time.perf_counter()
            client.post("/chat/completions", json=body("Any", "x" * 4000)).raise_for_status()
            took.append(time.perf_counter() - started)
    stalled = [t for t in took[2:] if t >= 0.038]
    assert len(stalled) < 5, f"{len(stalled)} of 10 calls took 38 ms or more: {took}"
