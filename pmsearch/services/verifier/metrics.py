"""Prometheus metrics of the verifier (``pm_`` prefix, default registry)."""

from __future__ import annotations

from typing import get_args

from prometheus_client import Counter, Histogram

from pmsearch.services.verifier.service import Verdict
from pmsearch.shared.messages import RemovalReason, RunMeta, RunResult

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
RESULTS_UNREPLICATED = Counter(
    "pm_verifier_results_unreplicated",
    "Finishing steps that stored a result fewer replicas than PM_REDIS_RESULT_REPLICAS held in time "
    "(Sentinel mode): not announced, retried.",
)
SECONDS = Histogram(
    "pm_verifier_seconds",
    "Seconds to handle one verification request, reading evidence to publishing.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)
# Budget use of each finished run, by outcome: steps used over the step budget, and the
# time from admission to the stored result over the time budget. Above 1 is possible:
# the watchdog ends a run after its deadline plus a grace.
BUDGET_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0)
STEPS_BUDGET_USED = Histogram(
    "pm_run_steps_budget_ratio", "Steps a finished run used over its step budget.", ["outcome"],
    buckets=BUDGET_BUCKETS,
)
SECONDS_BUDGET_USED = Histogram(
    "pm_run_seconds_budget_ratio", "A finished run's time, admission to result, over its time budget.", ["outcome"],
    buckets=BUDGET_BUCKETS,
)
# Dead letters of the drafts streams are counted by the worker runtime:
# pm_worker_dead_lettered_total{stream="pm:drafts:<producer>", reason=<error code>}.

for _result in ("kept", "removed"):
    SENTENCES.labels(result=_result)
for _outcome in ("answered", "insufficient_evidence", "budget_exhausted", "degraded", "cancelled"):
    RUNS_FINISHED.labels(outcome=_outcome)
    STEPS_BUDGET_USED.labels(_outcome)
    SECONDS_BUDGET_USED.labels(_outcome)
for _reason in get_args(RemovalReason):
    REMOVED.labels(reason=_reason)


def observe_verdict(verdict: Verdict) -> None:
    if verdict.kept:
        SENTENCES.labels(result="kept").inc(len(verdict.kept))
    if verdict.removed:
        SENTENCES.labels(result="removed").inc(len(verdict.removed))
    for removed in verdict.removed:
        REMOVED.labels(reason=removed.reason).inc()


def observe_finished(result: RunResult, run: RunMeta) -> None:
    """Count the run's outcome and its budget use; once per run (by the result's writer)."""
    RUNS_FINISHED.labels(outcome=result.outcome).inc()
    if run.max_steps > 0:
        STEPS_BUDGET_USED.labels(result.outcome).observe(result.usage.steps / run.max_steps)
    budget = run.deadline - run.created_at
    if budget > 0 and result.finished_at:
        SECONDS_BUDGET_USED.labels(result.outcome).observe(max(result.finished_at - run.created_at, 0.0) / budget)
