"""Redis access for the verifier: read a run's evidence, write its one result.

Exactly one result per run: ``SET final NX`` stores it, so of the drafts of a run (the
answerer's and the deadline watchdog's) the first to get there wins and the others lose
quietly. Storing and publishing (the run's ``answer``/``done`` progress events) is one
*finishing* step, guarded by an owner key:

1. claim: ``SET owner <token> NX PX <lease>``. The token is the draft's stream entry
   ID, stable across redeliveries of that draft and different for any other. The claim
   is a *lease* of :data:`OWNER_LEASE_SECONDS`, held only while the step runs: a draft
   that dies or is dead-lettered while holding it blocks the run's other drafts for
   seconds, never for the run's lifetime (they wait briefly, else stay pending and are
   retried, :class:`RunBusy`).
2. ``SET final NX EX``; if a result is already stored, it is the one published.
3. publish, then ``SET owner <token>|published EX <run TTL>``: the run is done, and
   every later draft (or redelivery) stops at step 1.

A claimant that finds a result stored without the *published* mark publishes it: the
draft that stored it died before publishing (its lease ran out). The remaining window
(killed after publishing but before the mark, or a finishing step slower than its
lease) can repeat the ``answer``/``done`` events; the gateway treats them as wake-ups and
serves a run's result from ``final`` alone, so a client still gets one ``done``.

No ``MULTI`` is needed (the verifier's Redis user has no transaction commands), and the
owner key ends in ``:final`` so the shipped ACL pattern ``pm:run:*:final`` covers it.

Every key is read and written through :class:`pmsearch.shared.runstore.RunStore` (its TTL
policy: the result and the published mark are kept for the run retention, the progress
stream is a working key). Read: the run's evidence, snapshot and record (the gateway's
record of the run, which every draft is held against).
"""

from __future__ import annotations

import asyncio
import logging
import time

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from pmsearch.services.verifier import metrics
from pmsearch.services.verifier.errors import ResultNotReplicated, RunBusy, StoreError
from pmsearch.shared.messages import EvidenceMessage, RunMeta, RunResult, RunSnapshot
from pmsearch.shared.runstore import RunStore, owner_key

__all__ = ["Repository", "owner_key"]

log = logging.getLogger("pmsearch.verifier")

# How long a draft may hold a run's finishing step: a few Redis round trips, so seconds
# are plenty; a dead holder blocks the run's other drafts no longer than this. Keep it
# well inside the span of a blocked draft's retries (the worker's reclaim idle time
# times its deliveries before a dead letter), so the blocked draft outlives the lease.
OWNER_LEASE_SECONDS = 10.0
# How long a draft waits in its handler for another draft's finishing step to end
# before it stays pending for a retry instead.
BUSY_WAIT_SECONDS = 1.0
# How long one finishing step waits for a result's replicas (Sentinel mode), in WAITs of
# REPLICA_WAIT_MS, before it leaves the draft to be retried; within the owner lease.
REPLICA_WAIT_SECONDS = 5.0
_BUSY_POLL_SECONDS = 0.02


class Repository:
    """The verifier's reads and writes; one instance per Redis connection."""

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        lease_seconds: float = OWNER_LEASE_SECONDS,
        busy_wait_seconds: float = BUSY_WAIT_SECONDS,
        retention_days: float | None = None,
        replicas: int = 0,
    ) -> None:
        self.redis = redis
        # Replicas a result must reach before the run is announced done (Sentinel mode):
        # a result a client has read must outlive the failover of the primary it was
        # written to, and replication is asynchronous.
        self.replicas = replicas
        self.store = RunStore(redis, retention_days=retention_days)
        self.lease_ms = max(1, int(lease_seconds * 1000))
        self.busy_wait_seconds = busy_wait_seconds

    async def load_evidence(self, run_id: str) -> dict[str, EvidenceMessage]:
        """The run's evidence hash, field = message ID. Unreadable entries are skipped
        (and logged): a sentence citing one then fails as an unknown citation."""
        try:
            return await self.store.evidence(run_id)
        except RedisError as exc:
            raise StoreError(f"cannot read evidence of run {run_id}: {exc}") from exc

    async def snapshot(self, run_id: str) -> RunSnapshot | None:
        """The planner's trace and usage so far, for endings the planner did not write
        (the deadline watchdog's)."""
        try:
            return await self.store.snapshot(run_id)
        except RedisError as exc:
            raise StoreError(f"cannot read the snapshot of run {run_id}: {exc}") from exc

    async def run_meta(self, run_id: str) -> RunMeta | None:
        """The gateway's record of the run; None when there is none (or it is unreadable)."""
        try:
            return await self.store.meta(run_id)
        except RedisError as exc:
            raise StoreError(f"cannot read the record of run {run_id}: {exc}") from exc

    async def stored_result(self, run_id: str) -> RunResult | None:
        return await self.store.result(run_id)

    async def finish(self, result: RunResult, token: str, *, deadline: float | None = None) -> bool:
        """Store ``result`` unless the run already has one, and publish the run's stored
        result unless that was done. True if this call published.

        ``token`` identifies the draft message (its stream entry ID); ``deadline`` is the
        run's, for the progress stream's TTL. Raises
        :class:`RunBusy` when another draft holds the run's finishing lease for longer
        than :data:`BUSY_WAIT_SECONDS` and no result is stored yet.
        """
        run_id = result.run_id
        try:
            if not await self._claim(run_id, token):
                return False
            if not await self._store(result):
                # Stored by an earlier finishing step that never published (it died, or
                # this is its own redelivery): publish what is stored, not this draft.
                earlier = await self.stored_result(run_id)
                if earlier is None:
                    return False  # expired meanwhile: nothing left to publish
                log.info("run %s: finishing the publication of a result stored earlier", run_id)
                result = earlier
            # The evidence kept for this result is shortened before the run is announced
            # done: a client that reads the run when it ends sees its final state.
            await self.store.release_kept(run_id)
            await self.store.announce(result, deadline, token)
        except RedisError as exc:
            raise StoreError(f"cannot write the result of run {run_id}: {exc}") from exc
        return True

    async def _store(self, result: RunResult) -> bool:
        """Store the result (False: the run had one); with replicas, return only once as
        many hold the run's result, waiting up to :data:`REPLICA_WAIT_SECONDS` (a
        failover's successor gets its replica back in a second or two).

        Raises :class:`ResultNotReplicated` past that: the run is not announced, since a
        client must not read a result a failover could lose; the draft stays pending and
        its retry finds the stored result and waits again."""
        give_up = time.monotonic() + REPLICA_WAIT_SECONDS
        stored = False
        while True:
            first, reached = await self.store.store_result_replicated(result, replicas=self.replicas)
            stored = stored or first
            if reached >= self.replicas:
                return stored
            if time.monotonic() >= give_up:
                metrics.RESULTS_UNREPLICATED.inc()
                raise ResultNotReplicated(
                    f"run {result.run_id}: its result reached {reached} of {self.replicas} replicas "
                    f"in {REPLICA_WAIT_SECONDS:g} s; announced when one holds it"
                )

    async def _claim(self, run_id: str, token: str) -> bool:
        """Take the run's finishing lease (or find this draft already holds it). False
        when the run is already published; :class:`RunBusy` when another draft holds the
        lease and no result is stored."""
        give_up = time.monotonic() + self.busy_wait_seconds
        while True:
            if await self.store.claim_owner(run_id, token, self.lease_ms):
                return True
            held = await self.store.owner(run_id)
            if held is None:
                continue  # the lease ran out between the two commands: try again
            holder, published = held
            if published:
                return False  # published: by another draft, or by this one before
            if holder == token:
                # This draft's own earlier delivery died inside the lease: carry on, with
                # a fresh lease.
                await self.store.renew_owner(run_id, token, self.lease_ms)
                return True
            if await self.store.finished(run_id):
                return False  # another draft stored the result and is publishing it
            if time.monotonic() >= give_up:
                raise RunBusy(f"run {run_id} is being finished by another draft; retried later")
            await asyncio.sleep(_BUSY_POLL_SECONDS)
