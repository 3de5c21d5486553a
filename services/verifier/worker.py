"""The verifier worker: consumes pm:drafts, writes the one result of each run.

Run with ``python -m services.verifier.worker``. Replicas share the ``verifier``
consumer group. Two subscriptions read the same group under one consumer name:

* ``XREADGROUP`` for new drafts (consumer ``<host>-<pid>``);
* ``XAUTOCLAIM`` for drafts pending longer than ``reclaim_idle_ms``: those of a replica
  that died, and those left unacknowledged after a failure (the retry); consumer
  ``<host>-<pid>-reclaim``, as in :mod:`shared.worker`. FastStream's ``min_idle_time``
  switches a subscriber to XAUTOCLAIM *only*, hence two.

The verifier does not use :func:`shared.worker.subscribe` because its handler needs the
stream entry ID (the run's owner token, see :mod:`services.verifier.repository`).

A draft is acknowledged only after its result is written (or it lost the race to
another draft of the same run). A draft that breaks its contract, or does not match the
gateway's record of its run (:func:`services.verifier.outcome.checked`), goes straight
to the dead-letter stream and finishes nothing; one that fails ``MAX_DELIVERIES`` times
goes there too, with its delivery count.

Entries are FastStream's legacy JSON envelope (``shared.bus.encode``); FastStream 0.7's
default binary format parser falls back to it, so ``message.body`` is the model's JSON.
The handler validates it itself rather than through a typed parameter, so that a
contract violation reaches the dead-letter logic instead of dying inside FastStream.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Literal

import redis.asyncio as aioredis
from faststream import AckPolicy, FastStream
from faststream.redis import StreamSub
from faststream.redis.annotations import Redis, RedisStreamMessage
from faststream.redis.message import RedisStreamMessage as StreamMessage
from pydantic import ValidationError

from shared.bus import DATA_FIELD, dead_letter_entry
from shared.messages import VerificationRequested
from shared.settings import VerifierSettings, verifier_settings
from shared.streams import DRAFTS, GROUP
from shared.telemetry import serve_metrics, setup_logging
from shared.worker import MAX_DELIVERIES, RECLAIM_IDLE_MS, consumer_name, make_broker
from services.verifier import metrics
from services.verifier.errors import DraftMismatch, RequestContractError, VerifierError
from services.verifier.outcome import checked
from services.verifier.repository import Repository
from services.verifier.service import decide_with_verdict

log = logging.getLogger("pmsearch.verifier")

RECLAIM_POLL_MS = 1_000

Handled = Literal["finished", "lost", "dead", "retry"]


def parse_request(body: bytes | str) -> VerificationRequested:
    try:
        return VerificationRequested.model_validate_json(body)
    except ValidationError as exc:
        raise RequestContractError(f"not a VerificationRequested: {exc}") from exc


async def _dead_letter(
    message: StreamMessage, redis: aioredis.Redis, code: str, error: str, deliveries: int
) -> None:
    raw = message.raw_message["data"]
    payload = raw.get(DATA_FIELD.encode(), raw.get(DATA_FIELD)) if isinstance(raw, dict) else raw
    await dead_letter_entry(redis, DRAFTS, payload if payload is not None else repr(raw), f"{code}: {error}", deliveries)
    metrics.DEAD_LETTERS.labels(code=code).inc()
    await message.ack()


async def handle(
    message: StreamMessage, redis: aioredis.Redis, *, reclaimed: bool = False
) -> Handled:
    """Verify one draft entry and write its run's result; ack when done."""
    started = time.perf_counter()
    if reclaimed:
        # A draft that crashed its worker every time never reaches the except below.
        deliveries = await message.get_delivery_count()
        if deliveries > MAX_DELIVERIES:
            await _dead_letter(message, redis, "too_many_deliveries", "gave up", deliveries)
            return "dead"
    try:
        request = parse_request(message.body)
    except RequestContractError as exc:
        await _dead_letter(message, redis, exc.code, exc.detail, await message.get_delivery_count())
        return "dead"

    entry_id = message.raw_message["message_ids"][0]
    token = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
    repo = Repository(redis)
    try:
        request = checked(request, await repo.run_meta(request.run_id))
        evidence = await repo.load_evidence(request.run_id)
        if not request.trace.steps:
            # The watchdog's ending carries no trace: report what the planner did.
            snapshot = await repo.snapshot(request.run_id)
            if snapshot is not None:
                request = request.model_copy(
                    update={"trace": snapshot.trace, "usage": snapshot.usage, "hits": request.hits or snapshot.hits}
                )
        result, verdict = decide_with_verdict(request, evidence)
        published = await repo.finish(result, token)
    except DraftMismatch as exc:
        log.warning("run %s: refused a draft: %s", request.run_id, exc.detail)
        await _dead_letter(message, redis, exc.code, exc.detail, await message.get_delivery_count())
        return "dead"
    except Exception as exc:  # noqa: BLE001 - decide between retry and dead letter
        deliveries = await message.get_delivery_count()
        code = exc.code if isinstance(exc, VerifierError) else "internal"
        if deliveries >= MAX_DELIVERIES:
            log.error("run %s: giving up after %d deliveries: %s", request.run_id, deliveries, exc)
            await _dead_letter(message, redis, code, str(exc), deliveries)
            return "dead"
        log.warning("run %s: delivery %d failed, left pending: %s", request.run_id, deliveries, exc)
        return "retry"

    metrics.observe_verdict(verdict)
    if published:
        metrics.observe_finished(result)
    await message.ack()
    metrics.SECONDS.observe(time.perf_counter() - started)
    log.info(
        "run %s: %s (%s)",
        request.run_id,
        result.outcome if published else "already finished",
        f"{len(verdict.kept)} kept, {len(verdict.removed)} removed",
    )
    return "finished" if published else "lost"


def build_app(
    settings: VerifierSettings | None = None,
    *,
    consumer: str | None = None,
    reclaim_idle_ms: int = RECLAIM_IDLE_MS,
    reclaim_poll_ms: int = RECLAIM_POLL_MS,
) -> FastStream:
    """The FastStream app; connects as the verifier's own Redis user."""
    settings = settings or verifier_settings()
    consumer = consumer or consumer_name()
    group = GROUP[DRAFTS]
    broker = make_broker(settings)

    @broker.subscriber(
        stream=StreamSub(DRAFTS, group=group, consumer=consumer),
        ack_policy=AckPolicy.MANUAL,
    )
    async def on_draft(message: RedisStreamMessage, redis: Redis) -> None:
        await handle(message, redis)

    @broker.subscriber(
        stream=StreamSub(
            DRAFTS,
            group=group,
            consumer=f"{consumer}-reclaim",
            min_idle_time=reclaim_idle_ms,
            polling_interval=reclaim_poll_ms,
        ),
        ack_policy=AckPolicy.MANUAL,
    )
    async def on_reclaimed(message: RedisStreamMessage, redis: Redis) -> None:
        await handle(message, redis, reclaimed=True)

    return FastStream(broker)


def main() -> None:
    settings = verifier_settings()
    setup_logging(settings.log_level)
    if settings.metrics_port:
        serve_metrics(settings.metrics_port)
    asyncio.run(build_app(settings).run())


if __name__ == "__main__":
    main()
