"""One stream entry's way through a worker (:mod:`pmsearch.shared.worker`): parsed, dropped when
stale, handled, acknowledged; or retried by Redis's delivery count, or dead-lettered.

What the runtime promises about retries, stale work and dead letters is described in
:mod:`pmsearch.shared.worker`; this module is that promise for a single entry.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel
from redis.asyncio import Redis

from pmsearch.shared import telemetry as T
from pmsearch.shared.consumer_group import ConsumerGroup, Fields, envelope_data
from pmsearch.shared.errors import ContractError
from pmsearch.shared.logging_setup import bind, task_fields
from pmsearch.shared.runstore import RunStore
from pmsearch.shared.streams import logical

log = logging.getLogger("pmsearch.worker")

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Delivery:
    """One delivery of a stream entry to a handler."""

    stream: str
    entry_id: str  # stable across redeliveries: an idempotency or owner token
    count: int  # how often Redis has delivered the entry, this time included


Handler = Callable[[M, Delivery], Awaitable[None]]


@dataclass
class Slots:
    """The handler slots of one input stream, shared by its partitions' readers: an
    entry read holds one from before its read (a reservation) until its handler ends."""

    limit: int
    held: int = 0
    waiting: int = 0  # readers waiting for a slot to come free
    freed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def free(self) -> int:
        return self.limit - self.held

    def take(self, count: int) -> None:
        self.held += count

    def give(self, count: int) -> None:
        if count:
            self.held -= count
            self.freed.set()


@dataclass
class Subscription(Generic[M]):
    """One input stream (or one partition of it) of a worker: its group, how its
    entries are parsed and handled, the handler slots it shares with the stream's other
    partitions, and its entries in flight."""

    group: ConsumerGroup
    parse: Callable[[str], M]
    handle: Handler[M]
    slots: Slots
    skip_late: bool
    skip_finished: bool
    forget: bool = False
    on_dead_letter: Callable[[Any], Awaitable[None]] | None = None
    inflight: dict[str, asyncio.Task[None]] = field(default_factory=dict)

    @property
    def stream(self) -> str:
        """The stream's name (a partition's too): what metrics, logs and handlers see."""
        return logical(self.group.stream)

    @property
    def key(self) -> str:
        """The Redis key read: the stream, or one of its partitions."""
        return self.group.stream


async def deliver(
    sub: Subscription[Any], max_deliveries: int, redis: Redis, entry_id: str, fields: Fields, count: int
) -> None:
    """Run one delivery of an entry: dead-letter it if delivered too often or unreadable,
    drop it if stale, else hand it to the handler; acknowledge only after the handler
    returned. A handler that raises leaves the entry pending for a retry."""
    stream = sub.stream
    # Each delivery is its own task: these fields name it on every line it logs.
    task_fields(stage=sub.group.group, stream=stream, entry_id=entry_id, delivery=count)
    started = time.perf_counter()
    if count > max_deliveries:
        # The earlier tries never came back: each killed its worker, or hung it.
        await _dead_letter(sub, entry_id, fields, "too_many_deliveries", f"delivered {count} times", count, _readable(sub, fields))
        return
    try:
        message = sub.parse(envelope_data(fields))
    except ContractError as exc:
        await _dead_letter(sub, entry_id, fields, exc.code, exc.detail, count)
        return
    except ValueError as exc:
        detail = str(exc.errors()[:3]) if hasattr(exc, "errors") else str(exc)
        await _dead_letter(sub, entry_id, fields, ContractError.code, detail, count)
        return
    bind(run_id=getattr(message, "run_id", None), tenant=getattr(message, "tenant_id", None),
         step=getattr(message, "step", None))
    try:
        stale = await _stale(sub, redis, message)
        if stale is not None:
            T.WORKER_DROPPED.labels(stream, stale).inc()
            log.info("dropped %s %s: %s", stream, entry_id, stale)
        else:
            began = time.perf_counter()
            try:
                await sub.handle(message, Delivery(stream=stream, entry_id=entry_id, count=count))
            finally:
                T.WORKER_HANDLE_SECONDS.labels(stream).observe(time.perf_counter() - began)
            log.info("handled", extra={"duration_ms": round((time.perf_counter() - started) * 1000, 1)})
    except ContractError as exc:
        await _dead_letter(sub, entry_id, fields, exc.code, exc.detail, count, message)
        return
    except Exception as exc:  # noqa: BLE001 - retry or dead-letter, by delivery count
        if count >= max_deliveries:
            log.exception("giving up on %s %s after %d deliveries", stream, entry_id, count)
            await _dead_letter(sub, entry_id, fields, "handler_failed", repr(exc), count, message)
            return
        T.WORKER_FAILURES.labels(stream).inc()
        T.WORKER_HANDLED.labels(stream, "failed").inc()
        log.exception("handler failed on %s %s (delivery %d); left pending for a retry", stream, entry_id, count)
        return
    try:
        await sub.group.ack(entry_id)
    except Exception as exc:  # noqa: BLE001 - redelivered later; handlers are idempotent
        log.warning("cannot acknowledge %s %s: %s", stream, entry_id, exc)
        return
    T.WORKER_HANDLED.labels(stream, "ok" if stale is None else "dropped").inc()
    await _forget(sub, entry_id)

async def _forget(sub: Subscription[Any], entry_id: str) -> None:
    """Delete an acknowledged entry of a ``forget`` stream; if this fails, the trim
    loop drops it (acknowledged, it is consumed)."""
    if not sub.forget:
        return
    try:
        await sub.group.forget(entry_id)
    except Exception as exc:  # noqa: BLE001 - trimmed later
        log.warning("cannot delete %s %s: %s", sub.stream, entry_id, exc)

async def _stale(sub: Subscription[Any], redis: Redis, message: BaseModel) -> str | None:
    deadline = getattr(message, "deadline", None)
    if sub.skip_late and deadline is not None and time.time() >= deadline:
        return "deadline_passed"
    run_id = getattr(message, "run_id", None)
    if sub.skip_finished and run_id and await RunStore(redis).finished(run_id):
        return "run_finished"
    return None

def _readable(sub: Subscription[Any], fields: Fields) -> Any:
    try:
        return sub.parse(envelope_data(fields))
    except Exception:  # noqa: BLE001 - an unreadable entry is dead-lettered as it is
        return None


async def _dead_letter(
    sub: Subscription[Any], entry_id: str, fields: Fields, reason: str, detail: str, count: int, message: Any = None
) -> None:
    # The detail stays in the dead letter: a validation error quotes its input (mail, a question).
    log.warning("dead-lettering %s %s (%s, delivery %d)", sub.stream, entry_id, reason, count)
    try:
        await sub.group.dead_letter(entry_id, fields, f"{reason}: {detail}", count, keep_payload=not sub.forget)
    except Exception:  # noqa: BLE001 - left pending; the next delivery tries again
        log.exception("cannot dead-letter %s %s", sub.stream, entry_id)
        return
    T.WORKER_DEAD_LETTERED.labels(sub.stream, reason).inc()
    T.WORKER_HANDLED.labels(sub.stream, "dead_lettered").inc()
    await _forget(sub, entry_id)
    if sub.on_dead_letter is not None and message is not None:
        try:
            await sub.on_dead_letter(message)
        except Exception:  # noqa: BLE001 - the dead letter is written; its run waits for the watchdog
            log.exception("the dead-letter hook of %s %s failed", sub.stream, entry_id)
