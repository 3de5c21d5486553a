"""The deadline watchdog: every run still open at its deadline plus the grace is ended
by asking the verifier for a ``budget_exhausted`` result.

A run the planner handed on to its draft before the deadline (the answer on its way to
the answerer or the verifier) is not ended: its draft is verified however late it is
read (an answerer restarted with answers queued, a verifier down for hours), so the
watchdog looks again every :data:`RECHECK_SECONDS` and ends it only when the draft has
not arrived by the deadline plus :data:`pmsearch.shared.runstore.policy.EVIDENCE_KEEP_SECONDS`,
the time its evidence is kept for it.

It is the backstop that guarantees an outcome, so it must not lose a run, and with
several gateway replicas two of them must not both act on one run:

1. a run whose result is stored leaves the set (nothing to do);
2. otherwise a replica *claims* the run: ``SET watchdog-claim NX PX`` (a lease of
   :data:`CLAIM_SECONDS`); a replica that does not get the claim leaves the run alone;
3. the claimant publishes the ending to ``pm:drafts:watchdog``, and only then removes the run
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
from collections.abc import Callable

from redis.asyncio import Redis

from pmsearch.services.gateway import metrics
from pmsearch.shared import streams
from pmsearch.shared.bus import publish
from pmsearch.shared.messages import Ending, RunMeta, VerificationRequested
from pmsearch.shared.runstore import RunStore
from pmsearch.shared.runstore.policy import EVIDENCE_KEEP_SECONDS

log = logging.getLogger("pmsearch.gateway.watchdog")

# Long enough that a published ending is normally stored before a second one is sent;
# short enough that a dead replica's runs are ended again within seconds.
CLAIM_SECONDS = 15.0
ROUND_SIZE = 50
RECHECK_SECONDS = 60.0


async def request_ending(redis: Redis, meta: RunMeta, ending: Ending, reason: str) -> None:
    """Ask the verifier, the only writer of results, to end the run with ``ending``.
    Sent twice it is harmless: the verifier stores one result per run."""
    await publish(
        redis,
        streams.DRAFTS_FROM_WATCHDOG,
        VerificationRequested(
            run_id=meta.run_id, tenant_id=meta.tenant_id, scope_token=meta.scope_token, deadline=meta.deadline,
            question=meta.question, ending=ending, reason=reason,
        ),
    )


async def watchdog_round(
    redis: Redis, *, now: float | None = None, claim_seconds: float = CLAIM_SECONDS, replica: str | None = None
) -> int:
    """End the runs overdue at ``now``; the number of endings published."""
    now = time.time() if now is None else now
    replica = replica or f"{socket.gethostname()}-{os.getpid()}"
    store = RunStore(redis)
    published = 0
    for run_id in await store.overdue(now, ROUND_SIZE):
        if await store.finished(run_id):
            await store.unwatch(run_id)
            continue
        meta = await store.meta(run_id)  # an unreadable record is logged by the store
        if meta is not None and await _draft_on_its_way(store, meta, now):
            await store.watch_again(run_id, min(now + RECHECK_SECONDS, meta.deadline + EVIDENCE_KEEP_SECONDS))
            metrics.WATCHDOG_WAITS.inc()
            continue
        if not await store.claim_overdue(run_id, replica, int(claim_seconds * 1000)):
            continue  # another replica (or an earlier round) is ending it
        if meta is not None:  # without its record the verifier could not end it either
            await request_ending(redis, meta, "budget_exhausted", "the time budget ran out")
            metrics.WATCHDOG_ENDINGS.inc()
            published += 1
        # Only now: until here a failure leaves the run for the next round.
        await store.unwatch(run_id)
    return published


async def _draft_on_its_way(store: RunStore, meta: RunMeta, now: float) -> bool:
    """The planner handed the run on before its deadline, and the time its evidence is
    kept for that draft has not run out."""
    if meta.cancelled_at is not None or now >= meta.deadline + EVIDENCE_KEEP_SECONDS:
        return False
    snapshot = await store.snapshot(run_id=meta.run_id)
    return snapshot is not None and snapshot.handed_off_at is not None and snapshot.handed_off_at < meta.deadline


async def watchdog(
    redis: Redis, stop: asyncio.Event, interval: float = 0.2, *, claim_seconds: float = CLAIM_SECONDS,
    on_round: Callable[[], None] | None = None,
) -> None:
    """Run :func:`watchdog_round` every ``interval`` seconds until ``stop`` is set;
    ``on_round`` after each round that succeeded (the gateway's readiness)."""
    while not stop.is_set():
        try:
            await watchdog_round(redis, claim_seconds=claim_seconds)
            if on_round is not None:
                on_round()
        except Exception:  # the watchdog must outlive a Redis hiccup
            metrics.WATCHDOG_FAILURES.inc()
            log.exception("watchdog round failed")
        try:
            await asyncio.wait_for(stop.wait(), timeout=interval)
        except TimeoutError:
            pass
