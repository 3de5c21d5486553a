"""Model-call metrics, declared once for every stage that calls a model.

Labels are bounded: ``stage`` is a constant of the calling code (never a run id),
``result`` one of ok | invalid | unavailable | timeout, ``kind`` prompt | completion.
Recorded by :func:`pmsearch.shared.llm.bookkeeping.call_model` only; the breaker's state is read
at scrape time from every :class:`pmsearch.shared.llm.client.ModelClient`'s breaker.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING
from weakref import WeakSet

from prometheus_client import REGISTRY, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from pmsearch.shared.llm.breaker import CircuitBreaker

SECONDS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 8, 10, 15, 20, 30, 45, 60)

MODEL_CALLS = Counter("pm_model_calls_total", "Model calls by stage and result.", ["stage", "result"])
MODEL_SECONDS = Histogram(
    "pm_model_seconds", "Model call time by stage and result.", ["stage", "result"], buckets=SECONDS_BUCKETS
)
MODEL_TOKENS = Counter("pm_model_tokens_total", "Model tokens by stage and kind.", ["stage", "kind"])
CALL_RESULTS = ("ok", "invalid", "unavailable", "timeout")  # bookkeeping.CallResult


def declare_calls(*stages: str) -> None:
    """Create the series of ``stages``' calls at zero, at import of the calling stage's
    metrics: a series born at its first call would hide that call from ``rate()``."""
    for stage in stages:
        for result in CALL_RESULTS:
            MODEL_CALLS.labels(stage, result)
            MODEL_SECONDS.labels(stage, result)
        for kind in ("prompt", "completion"):
            MODEL_TOKENS.labels(stage, kind)


class _BreakerStates(Collector):
    """``pm_model_breaker_state{state}``: how many of this process's model circuit
    breakers are in each state, read at scrape time (an open breaker turns half-open by
    the clock alone, with no call to record it). A service process has one."""

    def __init__(self) -> None:
        self._breakers: WeakSet[CircuitBreaker] = WeakSet()

    def watch(self, breaker: CircuitBreaker) -> None:
        self._breakers.add(breaker)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "pm_model_breaker_state", "Model circuit breakers of this process in each state.", labels=["state"]
        )
        states = [b.state for b in list(self._breakers)]
        for state in BREAKER_STATES:
            family.add_metric([state], states.count(state))
        yield family


BREAKER_STATES = ("closed", "open", "half_open")
_BREAKERS = _BreakerStates()
REGISTRY.register(_BREAKERS)


def watch_breaker(breaker: CircuitBreaker) -> None:
    """Report ``breaker`` in ``pm_model_breaker_state`` while it exists."""
    _BREAKERS.watch(breaker)
