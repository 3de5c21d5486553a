"""The verifier's Prometheus metrics."""

from __future__ import annotations

import uuid

import redis.asyncio as aioredis
from prometheus_client import REGISTRY

from pmsearch.services.verifier import metrics, worker
from pmsearch.services.verifier.decide import decide_with_verdict
from pmsearch.shared.delivery import Delivery
from pmsearch.shared.streams import DRAFTS_FROM_ANSWERER as DRAFTS
from pmsearch.shared.streams import evidence_key, meta_key
from tests.services.verifier.factory import M1, evidence, request, run_record


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_a_handled_draft_is_counted_by_sentence_removal_reason_outcome_and_time(redis_url: str) -> None:
    # Through the worker's handler, as a delivered draft is: what it counts, not what
    # the metrics module would count if asked.
    req = request(run_id=f"run-{uuid.uuid4().hex[:12]}", text=f"Accepted [{M1}]. Uncited.")
    client = aioredis.from_url(redis_url)
    try:
        await client.set(meta_key(req.run_id), run_record(req).model_dump_json(), ex=600)
        await client.hset(evidence_key(req.run_id), mapping={k: v.model_dump_json() for k, v in evidence().items()})
        before = counts()
        published = await worker.handle(req, Delivery(stream=DRAFTS, entry_id="1-0", count=1), client)
    finally:
        await client.aclose()
    assert published
    after = counts()
    assert {k: after[k] - before[k] for k in after if after[k] != before[k]} == {
        "kept": 1, "removed": 1, "no_citation": 1, "answered": 1, "handled": 1, "handled_in_a_minute": 1,
    }


def counts() -> dict[str, float]:
    return {
        "kept": value("pm_verifier_sentences_total", result="kept"),
        "removed": value("pm_verifier_sentences_total", result="removed"),
        "no_citation": value("pm_verifier_removed_sentences_total", reason="no_citation"),
        "answered": value("pm_runs_finished_total", outcome="answered"),
        "handled": value("pm_verifier_seconds_count"),
        "handled_in_a_minute": value("pm_verifier_seconds_bucket", le="60.0"),
    }


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
