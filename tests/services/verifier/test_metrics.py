"""The verifier's Prometheus metrics."""

from __future__ import annotations

from prometheus_client import REGISTRY

from services.verifier import metrics
from services.verifier.service import decide_with_verdict
from tests.services.verifier.factory import M1, evidence, request


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_names_and_labels() -> None:
    before = {
        "kept": value("pm_verifier_sentences_total", result="kept"),
        "removed": value("pm_verifier_sentences_total", result="removed"),
        "no_citation": value("pm_verifier_removed_sentences_total", reason="no_citation"),
        "answered": value("pm_runs_finished_total", outcome="answered"),
    }
    result, verdict = decide_with_verdict(request(text=f"Accepted [{M1}]. Uncited."), evidence())
    metrics.observe_verdict(verdict)
    metrics.observe_finished(result)
    metrics.SECONDS.observe(0.002)
    assert value("pm_verifier_sentences_total", result="kept") == before["kept"] + 1
    assert value("pm_verifier_sentences_total", result="removed") == before["removed"] + 1
    assert value("pm_verifier_removed_sentences_total", reason="no_citation") == before["no_citation"] + 1
    assert value("pm_runs_finished_total", outcome="answered") == before["answered"] + 1
    assert value("pm_verifier_seconds_bucket", le="60.0") >= 1
    assert value("pm_verifier_seconds_bucket", le="0.0025") >= 1
