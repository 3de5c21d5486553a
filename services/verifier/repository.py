"""Redis access for the verifier: read a run's evidence, write its one result.

Exactly one result per run: the first draft to claim the run (``SET owner NX``) writes
the result (``SET final NX EX``) and alone publishes ``RunFinished`` and the run's
``answer``/``done`` progress events. Two drafts for one run (the answerer's and the
deadline watchdog's) race here and one loses quietly.

Delivery is at-least-once, so a worker can die between claiming a run and
publishing. The claim is an *owner token* (the stream entry ID of the draft), written
``SET NX`` before the result: the draft that owns the run then stores the result
(``SET final NX``, which nobody else attempts) and publishes. A redelivered owner finds
its own token, stores the result if it is still missing (else re-reads it) and
publishes; any other draft finds a foreign token and stops. After publishing, the token
is marked done. No ``MULTI`` is needed (the verifier's Redis user has no transaction
commands), and the owner key ends in ``:final`` so the shipped ACL pattern
``pm:run:*:final`` covers it. The remaining window (killed after ``XADD`` to pm:results
but before the mark) can repeat ``RunFinished`` for a run; readers treat it as
idempotent by ``run_id``. A lost ``RunFinished`` would be worse.

Keys written: ``final_key(run)``, ``owner_key(run)``, ``progress_key(run)``,
``pm:results``. Read: ``evidence_key(run)``, ``snapshot_key(run)``, ``meta_key(run)``
(the gateway's record of the run, which every draft is held against).
"""

from __future__ import annotations

import logging
from typing import Any

import redis.asyncio as aioredis
from pydantic import ValidationError
from redis.exceptions import RedisError

from shared.bus import publish
from shared.messages import EvidenceMessage, ProgressEvent, RunFinished, RunMeta, RunResult, RunSnapshot
from shared.streams import (
    RESULTS, RUN_TTL_SECONDS, evidence_key, final_key, meta_key, progress_key, run_key, snapshot_key,
)
from services.verifier.errors import StoreError

log = logging.getLogger("pmsearch.verifier")

_DONE_SUFFIX = b"|published"


def owner_key(run_id: str) -> str:
    return run_key(run_id, "owner:final")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Repository:
    """The verifier's reads and writes; one instance per Redis connection."""

    def __init__(self, redis: aioredis.Redis) -> None:
        self.redis = redis

    async def load_evidence(self, run_id: str) -> dict[str, EvidenceMessage]:
        """The run's evidence hash, field = message ID. Unreadable entries are skipped
        (and logged): a sentence citing one then fails as an unknown citation."""
        try:
            raw = await self.redis.hgetall(evidence_key(run_id))
        except RedisError as exc:
            raise StoreError(f"cannot read evidence of run {run_id}: {exc}") from exc
        evidence: dict[str, EvidenceMessage] = {}
        for field, value in raw.items():
            message_id = _text(field)
            try:
                evidence[message_id] = EvidenceMessage.model_validate_json(value)
            except ValidationError as exc:
                log.warning("run %s: evidence %s unreadable, skipped: %s", run_id, message_id, exc)
        return evidence

    async def snapshot(self, run_id: str) -> RunSnapshot | None:
        """The planner's trace and usage so far, for endings the planner did not write
        (the deadline watchdog's)."""
        try:
            raw = await self.redis.get(snapshot_key(run_id))
        except RedisError as exc:
            raise StoreError(f"cannot read the snapshot of run {run_id}: {exc}") from exc
        if raw is None:
            return None
        try:
            return RunSnapshot.model_validate_json(raw)
        except ValidationError:
            log.warning("run %s: snapshot unreadable, ignored", run_id)
            return None

    async def run_meta(self, run_id: str) -> RunMeta | None:
        """The gateway's record of the run; None when there is none (or it is unreadable)."""
        try:
            raw = await self.redis.get(meta_key(run_id))
        except RedisError as exc:
            raise StoreError(f"cannot read the record of run {run_id}: {exc}") from exc
        if raw is None:
            return None
        try:
            return RunMeta.model_validate_json(raw)
        except ValidationError:
            log.warning("run %s: record unreadable, ignored", run_id)
            return None

    async def stored_result(self, run_id: str) -> RunResult | None:
        raw = await self.redis.get(final_key(run_id))
        return None if raw is None else RunResult.model_validate_json(raw)

    async def finish(self, result: RunResult, token: str) -> bool:
        """Store ``result`` unless the run already has one; publish it if this call's
        ``token`` owns the run and it was not published yet. True if it published.

        ``token`` identifies the draft message (its stream entry ID): stable across
        redeliveries of that message, different for any other draft.
        """
        run_id = result.run_id
        mine = token.encode()
        try:
            claimed = await self.redis.set(owner_key(run_id), mine, nx=True, ex=RUN_TTL_SECONDS)
            if not claimed and _text(await self.redis.get(owner_key(run_id))) != token:
                return False  # another draft owns the run, or this one already published
            stored = await self.redis.set(
                final_key(run_id), result.model_dump_json(), nx=True, ex=RUN_TTL_SECONDS
            )
            if not stored:
                if claimed:
                    # A result this protocol did not write (its claim expired first):
                    # not ours to publish. Mark the claim done so no redelivery does.
                    await self.redis.set(owner_key(run_id), mine + _DONE_SUFFIX, xx=True, keepttl=True)
                    return False
                # Our own earlier delivery stored it and died: publish what it stored.
                earlier = await self.stored_result(run_id)
                if earlier is None:
                    return False
                log.info("run %s: finishing the publication of a result stored earlier", run_id)
                result = earlier
            await self._publish(result)
            await self.redis.set(owner_key(run_id), mine + _DONE_SUFFIX, xx=True, keepttl=True)
        except RedisError as exc:
            raise StoreError(f"cannot write the result of run {run_id}: {exc}") from exc
        return True

    async def _publish(self, result: RunResult) -> None:
        progress = progress_key(result.run_id)
        async with self.redis.pipeline(transaction=False) as pipe:
            if result.answer is not None:
                await publish(
                    pipe,
                    progress,
                    ProgressEvent(event="answer", payload={"answer": result.answer.model_dump(mode="json")}),
                )
            await publish(pipe, progress, ProgressEvent(event="done", payload={"outcome": result.outcome}))
            # The progress stream may have been created without a TTL; never extend one.
            pipe.expire(progress, RUN_TTL_SECONDS, nx=True)
            await pipe.execute()
        await publish(
            self.redis,
            RESULTS,
            RunFinished(
                run_id=result.run_id,
                tenant_id=result.tenant_id,
                outcome=result.outcome,
                result=result,
            ),
        )
