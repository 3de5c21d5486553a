"""Model metrics (pmsearch/shared/llm/metrics.py): the breaker's state as Prometheus reads it."""

from __future__ import annotations

import gc
from typing import get_args

from prometheus_client import REGISTRY

from pmsearch.shared.llm import ModelClient
from pmsearch.shared.llm.bookkeeping import CallResult
from pmsearch.shared.llm.breaker import CircuitBreaker
from pmsearch.shared.llm.metrics import CALL_RESULTS
from pmsearch.shared.settings import PlannerSettings


def states() -> dict[str, float]:
    return {s: REGISTRY.get_sample_value("pm_model_breaker_state", {"state": s}) or 0.0
            for s in ("closed", "open", "half_open")}


def test_a_clients_breaker_is_reported_in_its_state_at_scrape_time() -> None:
    now = [0.0]
    breaker = CircuitBreaker(failures=1, reset_seconds=30, clock=lambda: now[0])
    client = ModelClient(PlannerSettings(model_base_url="http://127.0.0.1:9/v1"), breaker=breaker)
    # Other tests' clients may still be alive; a garbage collection in the middle would
    # drop some of them from the counts, so none runs while this test counts.
    gc.collect()
    gc.disable()
    try:
        before = states()
        breaker.record_failure()
        assert states()["open"] == before["open"] + 1 and states()["closed"] == before["closed"] - 1
        now[0] = 31.0  # half-open by the clock alone: no call records it
        assert states()["half_open"] == before["half_open"] + 1 and states()["open"] == before["open"]
    finally:
        gc.enable()
    del client


def test_declared_call_results_are_the_ones_bookkeeping_records() -> None:
    assert CALL_RESULTS == get_args(CallResult)
