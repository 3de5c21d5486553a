"""The one place that reads and writes a run's Redis keys.

Each stage holds a :class:`RunStore` on its own Redis connection and calls only the
methods its Redis user may run (``deploy/redis/users.acl.in``):

=========  ==================================================================
gateway    :meth:`admit`, :meth:`withdraw`, :meth:`meta`, :meth:`mark_cancelled`, :meth:`published_result`,
           :meth:`finished`, :meth:`read_progress`, the watchdog's :meth:`overdue`,
           :meth:`claim_overdue`, :meth:`unwatch`, and the index (:meth:`index_page`,
           :meth:`metas`, :meth:`results`)
planner    :meth:`create_state`, :meth:`state`, :meth:`held_state`,
           :meth:`add_progress`, :meth:`evidence_list`, :meth:`finished`
searcher   :meth:`add_evidence`, :meth:`finished`
answerer   :meth:`evidence_list`, :meth:`finished`
verifier   :meth:`meta`, :meth:`evidence`, :meth:`snapshot`, :meth:`result`, the
           finishing steps (:meth:`claim_owner` ... :meth:`announce`)
=========  ==================================================================

TTLs and the progress cap come from :mod:`pmsearch.shared.runstore.policy`; every record is
pydantic JSON (:mod:`pmsearch.shared.runstore.codec`).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel
from redis.asyncio import Redis
from redis.exceptions import WatchError

from pmsearch.shared import streams
from pmsearch.shared.bus import encode
from pmsearch.shared.messages import (
    EvidenceMessage,
    EvidenceSummary,
    ProgressEvent,
    RunMeta,
    RunResult,
    RunSnapshot,
)
from pmsearch.shared.runstore import codec
from pmsearch.shared.runstore.policy import (
    PROGRESS_MAXLEN,
    WORK_MARGIN_SECONDS,
    evidence_ttl,
    retention_seconds,
    work_ttl,
)

M = TypeVar("M", bound=BaseModel)

LOCK_MS = 5_000
# A holder releases with a plain DEL when less than this share of its lease has passed
# on its own clock; later, only after checking that the lock is still its own.
SAFE_RELEASE_SHARE = 0.5
INDEX_ALL = "pm:index:runs"  # every tenant's runs, by start time
PUBLISHED = b"|published"  # the owner key's value once a result is announced


@dataclass
class HeldState(Generic[M]):
    """A run's planner state held under its lock (:meth:`RunStore.held_state`); None
    when the run has none. ``save`` records what to write when the lock is released."""

    state: M | None
    pending: tuple[RunSnapshot, float] | None = None  # saved: the snapshot and deadline to write with the state

    def save(self, state: M, snapshot: RunSnapshot, deadline: float) -> None:
        self.state, self.pending = state, (snapshot, deadline)


def index_key(tenant_id: str) -> str:
    """One tenant's runs: a sorted set of run ids by start time."""
    return f"{INDEX_ALL}:{tenant_id}"


# One WAIT for a result's replicas (Sentinel mode); the verifier repeats it for a while.
REPLICA_WAIT_MS = 500


def owner_key(run_id: str) -> str:
    """The verifier's finishing lease, then its published mark. It ends in ``:final`` so
    the verifier's ACL pattern ``pm:run:*:final`` covers it."""
    return streams.run_key(run_id, "owner:final")


class RunStore:
    def __init__(self, redis: Redis, *, retention_days: float | None = None) -> None:
        self.redis = redis
        self.retention = retention_seconds() if retention_days is None else retention_seconds(retention_days)

    # ------------------------------------------------------------ any stage

    async def finished(self, run_id: str) -> bool:
        return bool(await self.redis.exists(streams.final_key(run_id)))

    async def result(self, run_id: str) -> RunResult | None:
        return codec.record(run_id, "result", await self.redis.get(streams.final_key(run_id)), RunResult)

    async def meta(self, run_id: str) -> RunMeta | None:
        """The gateway's record of the run; None when there is none (or it is unreadable)."""
        return codec.record(run_id, "record", await self.redis.get(streams.meta_key(run_id)), RunMeta)

    # ------------------------------------------------------------ gateway

    async def admit(self, meta: RunMeta, watch_at: float) -> None:
        """Record an admitted run, one hash slot a step (a Redis Cluster runs no
        transaction across slots), in an order that a writer dying between two steps
        leaves something the watchdog settles: its entry in the watchdog's set first (an
        entry without a record is dropped at the deadline), then the record (a recorded
        run is ended at its deadline, ``budget_exhausted``, unless it was published and
        ends on its own), then its place in the indexes. Each step may be sent again."""
        await self.watch_deadline(meta.run_id, watch_at)
        await self.record(meta)
        await self.index(meta)

    async def watch_deadline(self, run_id: str, watch_at: float) -> None:
        """Put the run in the watchdog's set (an entry already there keeps its time)."""
        await self.redis.zadd(streams.WATCHDOG, {run_id: watch_at}, nx=True)

    async def record(self, meta: RunMeta) -> None:
        """Store the run's record (a record already there is kept)."""
        await self.redis.set(streams.meta_key(meta.run_id), meta.model_dump_json(), ex=self.retention, nx=True)

    async def index(self, meta: RunMeta) -> None:
        """List the run in the indexes (all runs, its tenant's), each trimmed to the retention."""
        oldest = meta.created_at - self.retention
        async with self.redis.pipeline(transaction=False) as pipe:
            for index in (INDEX_ALL, index_key(meta.tenant_id)):
                pipe.zadd(index, {meta.run_id: meta.created_at})
                pipe.zremrangebyscore(index, "-inf", f"({oldest}")
            await pipe.execute()

    async def withdraw(self, meta: RunMeta) -> None:
        """Undo :meth:`admit` for a run that will not be published (its start failed):
        the watchdog's entry last, so that whatever a failure here leaves is still ended."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for index in (INDEX_ALL, index_key(meta.tenant_id)):
                pipe.zrem(index, meta.run_id)
            pipe.delete(streams.meta_key(meta.run_id))
            await pipe.execute()
        await self.redis.zrem(streams.WATCHDOG, meta.run_id)

    async def mark_cancelled(self, meta: RunMeta, at: float) -> RunMeta:
        """The record with its cancellation; the verifier ends the run ``cancelled``
        from then on, whatever ending it is sent."""
        cancelled = meta.model_copy(update={"cancelled_at": at})
        await self.redis.set(streams.meta_key(meta.run_id), cancelled.model_dump_json(), xx=True, keepttl=True)
        return cancelled

    async def read_progress(
        self, run_id: str, after: str, *, block_ms: int | None, count: int = 100
    ) -> list[tuple[str, ProgressEvent | None]]:
        """Progress entries after ``after`` (waiting up to ``block_ms``); an entry that
        breaks its contract comes as None, so its id still advances the reader."""
        entries = await self.redis.xread({streams.progress_key(run_id): after}, block=block_ms, count=count)
        return [
            (codec.text(entry_id), codec.progress(fields)) for _, items in entries or [] for entry_id, fields in items
        ]

    async def overdue(self, now: float, limit: int) -> list[str]:
        due = await self.redis.zrangebyscore(streams.WATCHDOG, "-inf", now, start=0, num=limit)
        return [codec.text(r) for r in due]

    async def claim_overdue(self, run_id: str, holder: str, lease_ms: int) -> bool:
        """A replica's lease on ending an overdue run; False when another holds it."""
        return bool(await self.redis.set(streams.watchdog_claim_key(run_id), holder, nx=True, px=lease_ms))

    async def unwatch(self, run_id: str) -> None:
        await self.redis.zrem(streams.WATCHDOG, run_id)

    async def watch_again(self, run_id: str, at: float) -> None:
        """Look at an overdue run again at ``at`` (its draft is on its way)."""
        await self.redis.zadd(streams.WATCHDOG, {run_id: at}, xx=True)

    async def index_page(
        self, tenant_id: str | None, *, newest: float, oldest: float, start: int, count: int
    ) -> list[tuple[str, float]]:
        """Up to ``count`` (run id, start time) of the index (every tenant's when
        ``tenant_id`` is None), newest first, started within [oldest, newest], skipping
        the first ``start``; runs started at the same time come by descending id."""
        rows = await self.redis.zrevrangebyscore(
            INDEX_ALL if tenant_id is None else index_key(tenant_id), newest, oldest, start=start, num=count,
            withscores=True,
        )
        return [(codec.text(m), float(s)) for m, s in rows]

    async def metas(self, run_ids: Sequence[str]) -> list[RunMeta | None]:
        return await self._many(run_ids, streams.meta_key, RunMeta, "record")

    async def results(self, run_ids: Sequence[str]) -> list[RunResult | None]:
        return await self._many(run_ids, streams.final_key, RunResult, "result")

    async def _many(self, run_ids: Sequence[str], key, model: type[M], what: str) -> list[M | None]:
        # One GET per key in a pipeline, not MGET: a run's keys carry their own hash tag.
        if not run_ids:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for run_id in run_ids:
                pipe.get(key(run_id))
            raws = await pipe.execute()
        return [codec.record(r, what, raw, model) for r, raw in zip(run_ids, raws)]

    # ------------------------------------------------------------ planner

    async def create_state(self, run_id: str, state: BaseModel, deadline: float) -> bool:
        """Store a new run's planner state; False when it already exists (a redelivery)."""
        return bool(
            await self.redis.set(streams.state_key(run_id), state.model_dump_json(), nx=True, ex=work_ttl(deadline))
        )

    async def state(self, run_id: str, model: type[M]) -> M | None:
        raw = await self.redis.get(streams.state_key(run_id))
        return None if raw is None else model.model_validate_json(raw)

    @asynccontextmanager
    async def held_state(self, run_id: str, model: type[M], lease_ms: int = LOCK_MS) -> AsyncIterator[HeldState[M]]:
        """The run's planner state, read under the run's lock (observations and the first
        plan of a run can arrive at once). What ``held.save`` is given is written as the
        lock is released: taking the lock with the read, and the write with the release,
        makes two round trips of what were four (a planner holds the lock about five
        times a run)."""
        key, token = streams.lock_key(run_id), secrets.token_hex(8)
        while True:
            # Taken before the SET is sent, so this clock runs ahead of Redis's lease.
            since = time.monotonic()
            async with self.redis.pipeline(transaction=False) as pipe:
                # Whoever holds the lock is the only writer of the state, so the GET
                # after a SET NX that took it reads a state nobody changes meanwhile.
                pipe.set(key, token, nx=True, px=lease_ms)
                pipe.get(streams.state_key(run_id))
                taken, raw = await pipe.execute()
            if taken:
                break
            await asyncio.sleep(0.01)
        held: HeldState[M] = HeldState(None)
        try:
            held.state = None if raw is None else model.model_validate_json(raw)
            yield held
        finally:
            # Well inside the lease nobody else can hold the lock: one DEL instead of
            # the five commands of a checked release.
            safe = (time.monotonic() - since) * 1000 < lease_ms * SAFE_RELEASE_SHARE
            async with self.redis.pipeline(transaction=False) as pipe:
                if held.pending is not None and held.state is not None:
                    snapshot, deadline = held.pending
                    ttl = work_ttl(deadline)
                    pipe.set(streams.state_key(run_id), held.state.model_dump_json(), ex=ttl)
                    # A run handed on to its draft: the watchdog reads the snapshot as long
                    # as it waits for that draft, and the verifier reports its trace.
                    kept = ttl if snapshot.handed_off_at is None else evidence_ttl(deadline)
                    pipe.set(streams.snapshot_key(run_id), snapshot.model_dump_json(), ex=kept)
                if safe:
                    pipe.delete(key)
                if len(pipe):
                    await pipe.execute()
            if not safe:
                await self._release(key, token)

    async def _release(self, key: str, token: str) -> None:
        """Delete the lock only if it is still ours (it may have expired and been taken).
        WATCH/MULTI rather than a script: no stage's Redis user may run scripts."""
        async with self.redis.pipeline(transaction=True) as pipe:
            try:
                await pipe.watch(key)
                current = await pipe.get(key)
                if current in (token, token.encode()):
                    pipe.multi()
                    pipe.delete(key)
                    await pipe.execute()
            except WatchError:
                pass  # changed meanwhile: no longer ours

    async def add_progress(self, run_id: str, event: ProgressEvent, deadline: float | None) -> None:
        key = streams.progress_key(run_id)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.xadd(key, encode(event), maxlen=PROGRESS_MAXLEN, approximate=True)
            pipe.expire(key, work_ttl(deadline))
            await pipe.execute()

    # ------------------------------------------------------------ searcher

    async def add_evidence(
        self, run_id: str, step: int, messages: Mapping[str, EvidenceMessage], deadline: float
    ) -> int:
        """Store each message as run evidence and announce each new one once (an
        ``evidence`` progress event); the number of new ones."""
        key, progress = streams.evidence_key(run_id), streams.progress_key(run_id)
        # Two round trips whatever the number of messages (a search returns a dozen):
        # store each, then announce those that were new.
        items = list(messages.items())
        async with self.redis.pipeline(transaction=False) as pipe:
            for message_id, msg in items:
                pipe.hsetnx(key, message_id, msg.model_dump_json())
            stored = await pipe.execute()
        fresh = [msg for (_, msg), new in zip(items, stored) if new]
        async with self.redis.pipeline(transaction=False) as pipe:
            for msg in fresh:
                summary = EvidenceSummary.of(msg, msg.snippet)
                event = ProgressEvent(event="evidence", payload={"step": step, "message": summary.model_dump(mode="json")})
                pipe.xadd(progress, encode(event), maxlen=PROGRESS_MAXLEN, approximate=True)
            pipe.expire(key, evidence_ttl(deadline))
            pipe.expire(progress, work_ttl(deadline))
            await pipe.execute()
        return len(fresh)

    # ------------------------------------------------------------ evidence readers

    async def evidence(self, run_id: str) -> dict[str, EvidenceMessage]:
        """The run's evidence by message id, as the searcher stored it."""
        return codec.evidence(run_id, await self.redis.hgetall(streams.evidence_key(run_id)))

    async def evidence_list(self, run_id: str, order: Sequence[str] = ()) -> list[EvidenceMessage]:
        """The run's evidence, those named in ``order`` first."""
        return codec.ordered(await self.evidence(run_id), order)

    # ------------------------------------------------------------ verifier

    async def snapshot(self, run_id: str) -> RunSnapshot | None:
        return codec.record(run_id, "snapshot", await self.redis.get(streams.snapshot_key(run_id)), RunSnapshot)

    async def claim_owner(self, run_id: str, token: str, lease_ms: int) -> bool:
        return bool(await self.redis.set(owner_key(run_id), token.encode(), nx=True, px=lease_ms))

    async def owner(self, run_id: str) -> tuple[str, bool] | None:
        """Who holds the finishing step: (token, published), or None."""
        held = await self.redis.get(owner_key(run_id))
        if held is None:
            return None
        published = held.endswith(PUBLISHED)
        return codec.text(held[: -len(PUBLISHED)] if published else held), published

    async def renew_owner(self, run_id: str, token: str, lease_ms: int) -> None:
        await self.redis.set(owner_key(run_id), token.encode(), xx=True, px=lease_ms)

    async def store_result(self, result: RunResult) -> bool:
        """``SET final NX``: False when the run already has a result."""
        return (await self.store_result_replicated(result, replicas=0))[0]

    async def store_result_replicated(self, result: RunResult, *, replicas: int) -> tuple[bool, int]:
        """:meth:`store_result`, then (with ``replicas``) ``WAIT replicas``: whether it
        was stored, and how many replicas held the run's result (this one or an earlier
        one) at most :data:`REPLICA_WAIT_MS` later.

        Redis counts a WAIT from the last write of its own connection, so the WAIT shares
        the SET's connection (one pipeline), and an EXPIRE of the key, a write whatever
        the SET did, makes it cover an earlier result too."""
        key = streams.final_key(result.run_id)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.set(key, result.model_dump_json(), nx=True, ex=self.retention)
            if replicas:
                pipe.expire(key, self.retention)
                pipe.wait(replicas, REPLICA_WAIT_MS)
            replies = await pipe.execute()
        return bool(replies[0]), int(replies[-1]) if replicas else 0

    async def published_result(self, run_id: str) -> RunResult | None:
        """The run's result once its finishing step announced it, else None: a result
        stored but not announced may not be on a replica yet (Sentinel mode) and could
        be lost to a failover, and a client must never read one that later differs."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.get(streams.final_key(run_id))
            pipe.get(owner_key(run_id))
            stored, held = await pipe.execute()
        if held is None or not held.endswith(PUBLISHED):
            return None
        return codec.record(run_id, "result", stored, RunResult)

    async def release_kept(self, run_id: str) -> None:
        """The run has its result: its evidence and the planner's snapshot need only
        outlive the working margin (replays of recent drafts), not the hours they are
        kept for a late draft."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.expire(streams.evidence_key(run_id), WORK_MARGIN_SECONDS, lt=True)
            pipe.expire(streams.snapshot_key(run_id), WORK_MARGIN_SECONDS, lt=True)
            await pipe.execute()

    async def announce(self, result: RunResult, deadline: float | None, token: str) -> None:
        """Mark the result published (by the draft ``token``), then the run's ``answer``
        (if any) and ``done`` progress entries: wake-ups for the gateway, which sends what
        the stored result holds once it is marked (:meth:`published_result`).

        The mark goes first in the same pipeline, so a gateway woken by ``done`` finds
        it. Cut off between the two, a retry of the draft finds the mark and ends; the
        gateway's quiet read then finds the result without its wake-up."""
        progress = streams.progress_key(result.run_id)
        events = []
        if result.answer is not None:
            events.append(ProgressEvent(event="answer", payload={"answer": result.answer.model_dump(mode="json")}))
        events.append(ProgressEvent(event="done", payload={"outcome": result.outcome}))
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.set(owner_key(result.run_id), token.encode() + PUBLISHED, ex=self.retention)
            for event in events:
                pipe.xadd(progress, encode(event), maxlen=PROGRESS_MAXLEN, approximate=True)
            # The progress stream may have been created without a TTL; never extend one.
            pipe.expire(progress, work_ttl(deadline), nx=True)
            await pipe.execute()

