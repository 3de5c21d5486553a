"""The embedded model's speed, measured when the stack starts it, and the run budget
taken from it."""

from __future__ import annotations

from pathlib import Path

from pmsearch.shared.llm.local_server import MIN_RUN_SECONDS, prompt_speed, run_seconds, server_command
from pmsearch.testing.scripted_model import Reply


def test_a_slow_model_gets_a_longer_run_budget_in_proportion():
    assert run_seconds(10.0) == 2 * run_seconds(20.0) > MIN_RUN_SECONDS


def test_a_fast_or_unmeasured_model_keeps_the_floor():
    assert run_seconds(90.0) == run_seconds(0.0) == MIN_RUN_SECONDS


def test_the_speed_is_read_from_one_call_that_sends_the_system_prompt(scripted_model):
    scripted_model.set_script([Reply(content="OK", prompt_tokens=400, completion_tokens=1, delay=0.5)])
    speed = prompt_speed(scripted_model.base_url, "any", "the fixed system prompt")
    assert 400 / 2.0 < speed < 400 / 0.5
    (body,) = scripted_model.bodies
    assert body["messages"][0] == {"role": "system", "content": "the fixed system prompt"}
    assert body["max_tokens"] == 1


def test_the_server_keeps_no_logits_it_is_never_asked_for() -> None:
    cmd = server_command(8090, Path("model.gguf"), n_threads=2)
    assert cmd[cmd.index("--logits_all") + 1] == "False"
    assert "--logits_all" not in server_command(8090, Path("model.gguf"), options={})
