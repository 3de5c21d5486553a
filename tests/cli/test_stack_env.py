"""What `pmsearch up` hands each process from the operator's environment (pmsearch/cli/stack.py)."""

from __future__ import annotations

from pmsearch.cli.stack import Stack


def test_log_settings_are_passed_on_and_no_other_pm_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("PM_LOG_FORMAT", "text")
    monkeypatch.setenv("PM_LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("PM_MODEL_API_KEY", "a-key-meant-for-the-model-stages-only")
    env = Stack(tmp_path, services=()).env_for("verifier")
    assert (env["PM_LOG_FORMAT"], env["PM_LOG_LEVEL"]) == ("text", "DEBUG")
    assert "PM_MODEL_API_KEY" not in env
