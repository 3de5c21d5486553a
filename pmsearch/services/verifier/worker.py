"""The verifier worker: consumes pm:drafts, writes the one result of each run.

Run with ``python -m pmsearch.services.verifier.worker``. Replicas share the ``verifier``
consumer group; reading, retries by delivery count, reclaiming a dead replica's drafts
and dead letters are the shared runtime's (:mod:`pmsearch.shared.worker`).

The handler uses the draft's stream entry ID as the run's owner token (see
:mod:`pmsearch.services.verifier.repository`). A draft is acknowledged only after its result is
written (or it lost the race to another draft of the same run). A draft that breaks its
contract, or does not match the gateway's record of its run
(:func:`pmsearch.services.verifier.outcome.checked`), raises a ContractError, so it goes straight
to the dead-letter stream and finishes nothing.

Unlike the other stages, the verifier does not drop late drafts or drafts of finished
runs before handling them: the deadline watchdog's ending arrives after the deadline by
design, and a redelivered owner of a finished run must still complete its publication.
"""

from __future__ import annotations

import asyncio
import logging
import time

import redis.asyncio as aioredis
from pydantic import ValidationError

from pmsearch.services.verifier import metrics
from pmsearch.services.verifier.decide import decide_with_verdict
from pmsearch.services.verifier.errors import DraftMismatch, RequestContractError
from pmsearch.services.verifier.outcome import cancellation, checked
from pmsearch.services.verifier.repository import Repository
from pmsearch.shared.bus import connect
from pmsearch.shared.health import serve
from pmsearch.shared.messages import VerificationRequested
from pmsearch.shared.settings import VerifierSettings, verifier_settings
from pmsearch.shared.streams import DRAFT_STREAMS, LEGACY_DRAFTS
from pmsearch.shared.telemetry import setup_logging
from pmsearch.shared.worker import Delivery, Policy, Worker

log = logging.getLogger("pmsearch.verifier")


def parse_request(data: bytes | str) -> VerificationRequested:
    try:
        return VerificationRequested.model_validate_json(data)
    except ValidationError as exc:
        raise RequestContractError(f"not a VerificationRequested: {exc}") from exc


async def handle(
    request: VerificationRequested, delivery: Delivery, redis: aioredis.Redis, *,
    retention_days: float | None = None, replicas: int = 0,
) -> bool:
    """Verify one draft and write its run's result; True if this call published it."""
    started = time.perf_counter()
    repo = Repository(redis, retention_days=retention_days, replicas=replicas)
    try:
        run = await repo.run_meta(request.run_id)
        request = cancellation(checked(request, run), run)
    except DraftMismatch as exc:
        log.warning("run %s: refused a draft: %s", request.run_id, exc.detail)
        raise
    evidence = await repo.load_evidence(request.run_id)
    if not request.trace.steps:
        # The watchdog's ending carries no trace: report what the planner did.
        snapshot = await repo.snapshot(request.run_id)
        if snapshot is not None:
            request = request.model_copy(
                update={"trace": snapshot.trace, "usage": snapshot.usage, "hits": request.hits or snapshot.hits}
            )
    # Off the event loop: verifying a long message takes a while, and a loop blocked past
    # the reclaim time stops the heartbeats, so another replica takes the same draft.
    result, verdict = await asyncio.to_thread(decide_with_verdict, request, evidence, run=run)
    published = await repo.finish(result, delivery.entry_id, deadline=request.deadline)
    metrics.observe_verdict(verdict)
    if published:
        metrics.observe_finished(result, run)
    metrics.SECONDS.observe(time.perf_counter() - started)
    log.info(
        "run %s: %s (%s)",
        request.run_id,
        result.outcome if published else "already finished",
        f"{len(verdict.kept)} kept, {len(verdict.removed)} removed",
    )
    return published


def build_app(
    settings: VerifierSettings | None = None,
    *,
    consumer: str | None = None,
    policy: Policy | None = None,
) -> Worker:
    """The verifier's worker; connects as the verifier's own Redis user."""
    settings = settings or verifier_settings()
    worker = Worker(settings, consumer=consumer, policy=policy)
    redis = connect(settings)

    async def on_draft(request: VerificationRequested, delivery: Delivery) -> None:
        await handle(request, delivery, redis, retention_days=settings.run_retention_days,
                     replicas=settings.result_replicas())

    # One stream per producer (pmsearch/shared/streams.py), and the old shared one, drained.
    for stream in (*DRAFT_STREAMS, LEGACY_DRAFTS):
        worker.subscribe(
            stream, VerificationRequested, on_draft,
            concurrency=settings.worker_concurrency, parse=parse_request, skip_late=False, skip_finished=False,
        )
    worker.on_stop(redis.aclose)
    return worker


def main() -> None:
    settings = verifier_settings()
    setup_logging(settings, "verifier")
    serve(build_app(settings), settings)


if __name__ == "__main__":
    main()
