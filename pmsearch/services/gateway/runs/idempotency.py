"""``Idempotency-Key`` for agentic runs: a request sent again with the same key follows
the run the first one started, instead of starting (and paying for) another.

A waiting client learns its run id only with the result, so a cut connection (a gateway
restart, a proxy timeout) leaves it nothing to resume: it can only send the request
again. With the same ``Idempotency-Key`` the second request gets the first run's result
or stream, and the tenant's cap is taken once.

One record per API key and header value, ``pm:idem:{key_id}:{sha256 of the value}``,
holding the run id, a digest of the request body and whether the run was started:

* **reserved** (``SET NX``) before the cap is taken, for :data:`RESERVE_SECONDS`; a
  request with the same key meanwhile gets 409 with ``Retry-After``;
* **started** once the run is recorded and just before it is published, then kept for a
  day (at most the run retention): a request with the same key and body follows the
  run. The mark is set only while the reservation is still this request's (``WATCH``,
  :meth:`mark_started`): a gateway that stalled past the reservation, whose key another
  request has since reserved, starts nothing (409), so one key never starts two runs. A
  run recorded whose mark never came (its gateway failed, or a Redis failover lost the
  mark) is started by the request sent again (``RunService._resume``). A gateway that
  dies between the mark and the publication leaves a recorded run that the watchdog ends
  at its deadline, and the request sent again follows it there;
* **released** when starting failed (403, 429, 503 ...), so the retry is decided afresh.
  A reservation whose gateway died expires by itself.

The same key with another body is 422, as in the IETF draft on the header
(draft-ietf-httpapi-idempotency-key-header). The records use plain commands and
WATCH/MULTI (the gateway's Redis user may not run scripts).
"""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, ConfigDict, ValidationError
from redis.asyncio import Redis
from redis.exceptions import WatchError

from pmsearch.services.gateway.errors import BadHeader, IdempotencyKeyInUse, IdempotencyKeyReused
from pmsearch.services.gateway.search.schemas import SearchRequest

RESERVE_SECONDS = 10  # far above the few milliseconds admitting a run takes
REMEMBER_SECONDS = 86_400
MAX_LENGTH = 255
RETRY_AFTER_SECONDS = 1


class Claim(BaseModel):
    """What an ``Idempotency-Key`` record holds."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    request: str  # request_digest() of the body that reserved it
    started: bool = False


def parse_idempotency_key(value: str | None) -> str | None:
    """The header as sent, or None when absent; 400 when empty, too long or not printable ASCII."""
    if value is None:
        return None
    if not 0 < len(value) <= MAX_LENGTH or not all(" " <= ch <= "~" for ch in value):
        raise BadHeader(f"Idempotency-Key must be 1 to {MAX_LENGTH} printable ASCII characters")
    return value


def request_digest(req: SearchRequest) -> str:
    """The body's fingerprint: equal for the same query, filters, limit and strategy."""
    return hashlib.sha256(req.model_dump_json().encode()).hexdigest()


def record_key(key_id: str, idempotency_key: str) -> str:
    return f"pm:idem:{key_id}:{hashlib.sha256(idempotency_key.encode()).hexdigest()}"


class IdempotencyKeys:
    def __init__(self, redis: Redis, *, remember_seconds: int = REMEMBER_SECONDS) -> None:
        self.redis = redis
        self.remember = remember_seconds

    async def reserve(self, key_id: str, idempotency_key: str, claim: Claim) -> Claim | None:
        """None when ``claim`` now holds the key; else the earlier request's claim."""
        key = record_key(key_id, idempotency_key)
        for _ in range(3):  # the earlier record may expire between SET NX and GET
            if await self.redis.set(key, claim.model_dump_json(), nx=True, ex=RESERVE_SECONDS):
                return None
            raw = await self.redis.get(key)
            if raw is None:
                continue
            earlier = parse_claim(raw)
            if earlier is None:  # unreadable: not ours to honour
                await self.redis.set(key, claim.model_dump_json(), ex=RESERVE_SECONDS)
            return earlier
        raise IdempotencyKeyInUse("a request with this Idempotency-Key is being started", retry_after=RETRY_AFTER_SECONDS)

    async def mark_started(self, key_id: str, idempotency_key: str, claim: Claim) -> None:
        """Mark the reserved claim's run started, kept for the record's time, while the
        reservation is still this request's (``WATCH``, then a MULTI on the one key); 409
        when it is not (it expired, and may be another request's now): a gateway that
        stalled past its reservation publishes nothing, so one key never starts two runs.
        Marked already for this run (the request sent again resumed it): nothing to do."""
        key = record_key(key_id, idempotency_key)
        async with self.redis.pipeline(transaction=True) as pipe:
            try:
                await pipe.watch(key)
                held = parse_claim(await pipe.get(key))
                if held is not None and held.run_id == claim.run_id and held.started:
                    await pipe.unwatch()  # the request sent again started it (RunService._resume)
                    return
                if held is None or held.run_id != claim.run_id:
                    await pipe.unwatch()
                    raise IdempotencyKeyInUse(
                        "this request's Idempotency-Key reservation ran out before its run started; send it again",
                        retry_after=RETRY_AFTER_SECONDS,
                    )
                pipe.multi()
                pipe.set(key, claim.model_copy(update={"started": True}).model_dump_json(), ex=self.remember)
                await pipe.execute()
            except WatchError as exc:
                raise IdempotencyKeyInUse(
                    "this request's Idempotency-Key was taken by another request before its run started; send it again",
                    retry_after=RETRY_AFTER_SECONDS,
                ) from exc

    async def release(self, key_id: str, idempotency_key: str, claim: Claim) -> None:
        """Drop the reservation if it is still ``claim``'s and not started (a later
        request's, or a run's that the request sent again started, is left alone)."""
        key = record_key(key_id, idempotency_key)
        async with self.redis.pipeline(transaction=True) as pipe:
            try:
                await pipe.watch(key)
                held = parse_claim(await pipe.get(key))
                if held is None or held.run_id != claim.run_id or held.started:
                    await pipe.unwatch()
                    return
                pipe.multi()
                pipe.delete(key)
                await pipe.execute()
            except WatchError:
                pass  # changed meanwhile: no longer this claim's to drop


def follow(earlier: Claim, digest: str) -> str:
    """The run id a repeated request follows; 422 for another body, 409 while the
    earlier request is still starting its run."""
    if earlier.request != digest:
        raise IdempotencyKeyReused("this Idempotency-Key was sent with another request body; use a new key")
    if not earlier.started:
        raise IdempotencyKeyInUse(
            "a request with this Idempotency-Key is still starting its run", retry_after=RETRY_AFTER_SECONDS
        )
    return earlier.run_id


def parse_claim(raw: bytes | str | None) -> Claim | None:
    """The stored claim; None when there is none or it does not parse."""
    try:
        return None if raw is None else Claim.model_validate_json(raw)
    except ValidationError:
        return None


__all__ = [
    "Claim", "IdempotencyKeys", "follow", "parse_claim", "parse_idempotency_key", "record_key", "request_digest",
]
