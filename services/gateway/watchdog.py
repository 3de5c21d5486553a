"""The deadline watchdog: every run still open at its deadline plus the grace is ended
by asking the verifier for a ``budget_exhausted`` result.

It is the backstop that guarantees an outcome, so it must not lose a run, and with
several gateway replicas two of them must not both act on one run:

1. a run whose result is stored leaves the set (nothing to do);
2. otherwise a replica *claims* the run: ``SET watchdog-claim NX PX`` (a lease of
   :data:`CLAIM_SECONDS`); a replica that does not get the claim leaves the run alone;
3. the claimant publishes the ending to ``pm:drafts``, and only then removes the run
   from the set.

A failure or a dead replica anywhere in 2-3 leaves the run in the set: when the lease
runs out, the next round (of any replica) publishes again. Publishing twice is safe:
the verifier stores one result per run and the second draft loses quietly.

The watchdog uses its own Redis client (the gateway's control connection), so client
load on the request pool cannot starve it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time

from pydantic import ValidationError
from redis.asyncio import Redis

from services.gateway import metrics
from shared import streams
from shared.bus import publish
from shared.messages import RunMeta, VerificationRequested

log = logging.getLogger("pmsearch.gateway.watchdog")

# Long enough that a published ending is normally stored before a second one is sent;
# short enough that a dead replica's runs are ended again within seconds.
CLAIM_SECONDS = 15.0
ROUND_SIZE = 50


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


async def watchdog_round(
    redis: Redis, *, now: float | None = None, claim_seconds: float = CLAIM_SECONDS, replica: str | None = None
) -> int:
    """End the runs overdue at ``now``; the number of endings published."""
    now = time.time() if now is None else now
    replica = replica or f"{socket.gethostname()}-{os.getpid()}"
    published = 0
    due = await redis.zrangebyscore(streams.WATCHDOG, "-inf", now, start=0, num=ROUND_SIZE)
    for raw_id in due:
        run_id = _text(raw_id)
        if await redis.exists(streams.final_key(run_id)):
            await redis.zrem(streams.WATCHDOG, run_id)
            continue
        claim = streams.watchdog_claim_key(run_id)
        if not await redis.set(claim, replica, nx=True, px=int(claim_seconds * 1000)):
            continue  # another replica (or an earlier round) is ending it
        meta = _meta(run_id, await redis.get(streams.meta_key(run_id)))
        if meta is not None:  # without its record the verifier could not end it either
            await publish(
                redis,
                streams.DRAFTS,
                VerificationRequested(
                    run_id=run_id, tenant_id=meta.tenant_id, scope_token=meta.scope_token, deadline=meta.deadline,
                    question=meta.question, ending="budget_exhausted", reason="the time budget ran out",
                ),
            )
            metrics.WATCHDOG_ENDINGS.inc()
            published += 1
        # Only now: until here a failure leaves the run for the next round.
        await redis.zrem(streams.WATCHDOG, run_id)
    return published


def _meta(run_id: str, raw: bytes | None) -> RunMeta | None:
    if raw is None:
        return None
    try:
        return RunMeta.model_validate_json(raw)
    except ValidationError:
        log.error("run %s: its record is unreadable; the watchdog cannot end it", run_id)
        return None


async def watchdog(
    redis: Redis, stop: asyncio.Event, interval: float = 0.2, *, claim_seconds: float = CLAIM_SECONDS
) -> None:
    """Run :func:`watchdog_round` every ``interval`` seconds until ``stop`` is set."""
    while not stop.is_set():
        try:
            await watchdog_round(redis, claim_seconds=claim_seconds)
        except Exception:  # the watchdog must outlive a Redis hiccup
            metrics.WATCHDOG_FAILURES.inc()
            log.exception("watchdog round failed")
        try:
            await asyncio.wait_for(stop.wait(), timeout=interval)
        except asyncio.TimeoutError:
            pass
