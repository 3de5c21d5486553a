"""Prometheus metrics of the verifier (``pm_`` prefix, default registry)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from shared.messages import RunResult
from services.verifier.service import Verdict

SENTENCES = Counter(
    "pm_verifier_sentences",
    "Draft sentences verified, by result.",
    ["result"],
)
REMOVED = Counter(
    "pm_verifier_removed_sentences",
    "Draft sentences removed by verification, by reason.",
    ["reason"],
)
RUNS_FINISHED = Counter(
    "pm_runs_finished",
    "Runs finished (exactly one per run: counted by the writer that stored the result).",
    ["outcome"],
)
SECONDS = Histogram(
    "pm_verifier_seconds",
    "Seconds to handle one verification request, reading evidence to publishing.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)
# Dead letters of pm:drafts are counted by the worker runtime:
# pm_worker_dead_lettered_total{stream="pm:drafts", reason=<error code>}.

for _result in ("kept", "removed"):
    SENTENCES.labels(result=_result)
for _outcome in ("answered", "insufficient_evidence", "budget_exhausted", "degraded"):
    RUNS_FINISHED.labels(outcome=_outcome)


def observe_verdict(verdict: Verdict) -> None:
    if verdict.kept:
        SENTENCES.labels(result="kept").inc(len(verdict.kept))
    if verdict.removed:
        SENTENCES.labels(result="removed").inc(len(verdict.removed))
    for removed in verdict.removed:
        REMOVED.labels(reason=removed.reason).inc()


def observe_finished(result: RunResult) -> None:
    RUNS_FINISHED.labels(outcome=result.outcome).inc()
