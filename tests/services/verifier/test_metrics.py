"""The verifier's Prometheus metrics."""

from __future__ import annotations

from prometheus_client import REGISTRY

from services.verifier import metrics
from services.verifier.decide import decide_with_verdict
from tests.services.verifier.factory import M1, evidence, request, run_record


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_names_and_labels() -> None:
    before = {
        "kept": value("pm_verifier_sentences_total", result="kept"),
        "removed": value("pm_verifier_sentences_total", result="removed"),
        "no_citation": value("pm_verifier_removed_sentences_total", reason="no_citation"),
        "answered": value("pm_runs_finished_total", outcome="answered"),
    }
    req = request(text=f"Accepted [{M1}]. Uncited.")
    result, verdict = decide_with_verdict(req, evidence())
    metrics.observe_verdict(verdict)
    metrics.observe_finished(result, run_record(req))
    metrics.SECONDS.observe(0.002)
    assert value("pm_verifier_sentences_total", result="kept") == before["kept"] + 1
    assert value("pm_verifier_sentences_total", result="removed") == before["removed"] + 1
    assert value("pm_verifier_removed_sentences_total", reason="no_citation") == before["no_citation"] + 1
    assert value("pm_runs_finished_total", outcome="answered") == before["answered"] + 1
    assert value("pm_verifier_seconds_bucket", le="60.0") >= 1
    assert value("pm_verifier_seconds_bucket", le="0.0025") >= 1


def test_budget_use_is_observed_by_outcome_as_a_share_of_each_budget() -> None:
    req = request(text=f"Accepted [{M1}].")
    run = run_record(req)  # 4 steps, 60 s
    result, _ = decide_with_verdict(req, evidence())
    result = result.model_copy(
        update={"usage": result.usage.model_copy(update={"steps": 3}), "finished_at": run.created_at + 15}
    )
    before = {
        "steps_le_0.8": value("pm_run_steps_budget_ratio_bucket", outcome=result.outcome, le="0.8"),
        "steps_le_0.7": value("pm_run_steps_budget_ratio_bucket", outcome=result.outcome, le="0.7"),
        "secs_le_0.3": value("pm_run_seconds_budget_ratio_bucket", outcome=result.outcome, le="0.3"),
        "secs_le_0.2": value("pm_run_seconds_budget_ratio_bucket", outcome=result.outcome, le="0.2"),
    }
    metrics.observe_finished(result, run)
    # 3 of 4 steps: 0.75, in (0.7, 0.8]; 15 of 60 s: 0.25, in (0.2, 0.3].
    assert value("pm_run_steps_budget_ratio_bucket", outcome=result.outcome, le="0.8") == before["steps_le_0.8"] + 1
    assert value("pm_run_steps_budget_ratio_bucket", outcome=result.outcome, le="0.7") == before["steps_le_0.7"]
    assert value("pm_run_seconds_budget_ratio_bucket", outcome=result.outcome, le="0.3") == before["secs_le_0.3"] + 1
    assert value("pm_run_seconds_budget_ratio_bucket", outcome=result.outcome, le="0.2") == before["secs_le_0.2"]
