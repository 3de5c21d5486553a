"""The one worker runtime: every stage's stream consumers (planner, searcher, answerer,
verifier) run on it, each stage through a ``build_app(settings, ...)`` factory.

Each stage's replicas form one consumer group per input stream (``pmsearch.shared.streams.GROUP``);
each process is one consumer, ``<host>-<pid>``. For every input stream:

* **Groups** are created at ``0`` with ``MKSTREAM`` before the first read, and again on
  ``NOGROUP`` (Redis lost its data, or the group was destroyed), so entries published
  while the group was missing are read rather than skipped, and no reader ever exits.
* **Bounded reads**: ``XREADGROUP COUNT n`` asks for no more entries than the process has
  free handler slots (at most ``PM_WORKER_READ_COUNT``). A burst stays in the stream
  until some replica can start it, instead of queueing in one consumer's pending list.
* **Partitions** (``PM_STREAM_PARTITIONS``): each key of a split stream has a reader of
  its own (a cluster refuses one read over keys on two slots); they share the stream's
  slots (:class:`pmsearch.shared.delivery.Slots`), reserving before each read. A freed
  slot wakes the waiting readers in the order they began to wait, and a reader that
  holds a slot another waits for looks without blocking and steps aside when its key is
  empty: a backlog in one key does not hold back another.
* **Heartbeats**: while a handler runs, its entry is claimed again by its own consumer
  (``XCLAIM ... 0 <id> JUSTID``, which does not count as a delivery) every
  ``PM_WORKER_HEARTBEAT_SECONDS``. So an entry only goes idle for
  ``PM_WORKER_RECLAIM_IDLE_SECONDS`` when its consumer is dead, and ``XAUTOCLAIM`` after
  that idle time takes work only from the dead, never from a long model call or import.
* **Retries by Redis's own delivery count** (``XPENDING``'s times-delivered; ``XAUTOCLAIM``
  adds one per takeover): an entry delivered more than ``PM_WORKER_MAX_DELIVERIES`` times
  goes to ``<stream>:dead`` without running again, whatever ended the earlier tries (an
  exception, OOM, SIGKILL, a native crash). A handler that raises leaves its entry
  pending, to be taken over after the idle time, or dead-lettered on its last delivery. A
  :class:`pmsearch.shared.errors.ContractError` (from parsing or from the handler) dead-letters
  at once: retrying cannot fix it.
* **Stale work** is acknowledged without running: a message whose ``deadline`` has passed
  (nobody waits for it; the gateway's watchdog ends the run) or whose run already has
  its final result. Counted in ``pm_worker_dropped_total``.
* An entry is acknowledged only after its handler returned.
* **Trimming by age**: every ``trim_ms`` each input stream drops (``XTRIM MINID``) the
  entries every group has consumed and that are older than ``keep_consumed_ms`` (a run's
  working-key margin, for a replay of recent drafts); an entry not yet delivered or still
  pending is never dropped. A subscription with ``forget=True`` (raw mail) trims each
  entry as soon as it is acknowledged and nothing older is pending, and its dead letters
  keep no payload. Nothing is deleted with ``XDEL``: a group's lag, which an autoscaler
  reads, stays exact.

Why not FastStream's stream subscriber (0.7): it creates groups at ``$``, stops the
subscriber and exits the app on ``NOGROUP``, reports no delivery count before Redis 8.4,
and has no hook to heartbeat a running handler's entry. Entries keep FastStream's JSON
envelope (``pmsearch.shared.bus.encode``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from pydantic import BaseModel
from redis.asyncio import Redis

from pmsearch.shared import telemetry as T
from pmsearch.shared.bus import connect
from pmsearch.shared.collector import settle_after_startup
from pmsearch.shared.consumer_group import ConsumerGroup, Fields, is_nogroup
from pmsearch.shared.delivery import Delivery, Handler, Slots, Subscription, deliver
from pmsearch.shared.runstore import WORK_MARGIN_SECONDS
from pmsearch.shared.settings import ServiceSettings
from pmsearch.shared.streams import GROUP, partitions

log = logging.getLogger("pmsearch.worker")

M = TypeVar("M", bound=BaseModel)


def consumer_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True)
class Policy:
    """How the runtime reads, retries and reclaims; from settings, or tests' own."""

    reclaim_idle_ms: int = 5_000
    heartbeat_ms: int = 1_000
    reclaim_poll_ms: int = 1_000
    max_deliveries: int = 5
    read_count: int = 8
    block_ms: int = 1_000  # one XREADGROUP's wait: well below the client's socket timeout
    # On SIGTERM, running handlers get this long (a supervisor kills after ~10 s); one
    # cut short is taken over by another replica after the reclaim idle time.
    shutdown_grace_seconds: float = 5.0
    report_seconds: float = 5.0
    trim_ms: int = 5_000  # how often consumed entries are trimmed
    keep_consumed_ms: int = WORK_MARGIN_SECONDS * 1000  # and how long they are kept

    def __post_init__(self) -> None:
        if self.heartbeat_ms * 2 > self.reclaim_idle_ms:
            raise ValueError("a heartbeat must come at least twice per reclaim idle time")

    @classmethod
    def from_settings(cls, settings: ServiceSettings, **overrides: Any) -> Policy:
        values: dict[str, Any] = {
            "reclaim_idle_ms": int(settings.worker_reclaim_idle_seconds * 1000),
            "heartbeat_ms": int(settings.worker_heartbeat_seconds * 1000),
            "max_deliveries": settings.worker_max_deliveries,
            "read_count": settings.worker_read_count,
        }
        return cls(**(values | overrides))


class Worker:
    """A stage's stream consumers in one process. ``start``/``stop`` for tests, ``run``
    for a process (until SIGTERM or SIGINT)."""

    def __init__(
        self,
        settings: ServiceSettings,
        *,
        consumer: str | None = None,
        policy: Policy | None = None,
        redis: Redis | None = None,
    ) -> None:
        self.settings = settings
        self.consumer = consumer or consumer_name()
        self.policy = policy or Policy.from_settings(settings)
        # The runtime's own client: reads, acks and heartbeats never queue behind a
        # burst of handler commands for a pooled connection.
        self.redis = redis or connect(settings)
        self._owns_redis = redis is None
        self._subs: list[Subscription[Any]] = []
        self._on_start: list[Callable[[], Awaitable[None]]] = []
        self._on_stop: list[Callable[[], Awaitable[None]]] = []
        self._loops: list[asyncio.Task[None]] = []
        self._background: list[asyncio.Task[None]] = []
        self._stopping = asyncio.Event()
        self._ready_checks: dict[str, Callable[[], Awaitable[None]]] = {}

    # ------------------------------------------------------------ wiring

    def subscribe(
        self,
        stream: str,
        model: type[M],
        handle: Handler[M],
        *,
        concurrency: int = 1,
        parse: Callable[[str], M] | None = None,
        skip_late: bool = True,
        skip_finished: bool = True,
        group: str | None = None,
        forget: bool = False,
        on_dead_letter: Callable[[M], Awaitable[None]] | None = None,
    ) -> None:
        """Run ``handle(message, delivery)`` for each entry of ``stream``.

        ``skip_late``/``skip_finished``: acknowledge without running a message whose
        deadline passed / whose run already has a result. ``forget``: the entries hold
        what must not outlive their handling (raw mail): each is deleted from the stream
        once acknowledged, and dead-lettered without its payload. ``parse`` turns the
        envelope's JSON into the message (default: ``model``'s validation); it may raise
        a ContractError with its own code. ``on_dead_letter(message)`` runs once a
        readable message is dead-lettered, so that its run can still end (it must not
        raise; a failure is logged)."""
        T.declare_stream(stream, self.policy.reclaim_idle_ms / 1000)
        slots = Slots(max(concurrency, 1))
        for key in partitions(stream):
            self._subs.append(
                Subscription(
                    group=ConsumerGroup(self.redis, key, group or GROUP[stream], self.consumer),
                    parse=parse or model.model_validate_json,
                    handle=handle,
                    slots=slots,
                    skip_late=skip_late,
                    skip_finished=skip_finished,
                    forget=forget,
                    on_dead_letter=on_dead_letter,
                )
            )

    def on_start(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Run ``hook`` after the groups exist, before the first read."""
        self._on_start.append(hook)

    def on_stop(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Run ``hook`` after the last handler ended (close clients, flush an index)."""
        self._on_stop.append(hook)

    def check_ready(self, name: str, check: Callable[[], Awaitable[None]]) -> None:
        """Add a readiness check (raises when the stage cannot work), served on ``/readyz``
        (:mod:`pmsearch.shared.health`) beside Redis and the consumer groups."""
        self._ready_checks[name] = check

    @property
    def ready_checks(self) -> dict[str, Callable[[], Awaitable[None]]]:
        return dict(self._ready_checks)

    @property
    def streams(self) -> list[str]:
        """The input streams, by name (a partitioned one once)."""
        return list(dict.fromkeys(s.stream for s in self._subs))

    @property
    def groups(self) -> dict[str, str]:
        """Each input key's consumer group (every partition of a partitioned stream)."""
        return {s.key: s.group.group for s in self._subs}

    @property
    def alive(self) -> bool:
        """Started, and every consume loop still runs."""
        return bool(self._loops) and not any(t.done() for t in self._loops)

    # ------------------------------------------------------------ life cycle

    async def start(self) -> None:
        self._stopping.clear()
        for sub in self._subs:
            await self._ensure_group(sub)
        for hook in self._on_start:
            await hook()
        for sub in self._subs:
            self._loops.append(asyncio.create_task(self._consume_loop(sub), name=f"consume {sub.key}"))
            self._background.append(asyncio.create_task(self._heartbeat_loop(sub), name=f"heartbeat {sub.key}"))
            self._background.append(asyncio.create_task(self._trim_loop(sub), name=f"trim {sub.key}"))
        self._background.append(
            asyncio.create_task(
                T.report_streams(self.redis, self.groups, self.policy.report_seconds),
                name="report streams",
            )
        )

    async def stop(self) -> None:
        """Stop reading, let running handlers finish (up to the grace time), then close.
        A handler cut short leaves its entry pending for another consumer."""
        self._stopping.set()
        for sub in self._subs:
            sub.slots.freed.set()
        await _settle(self._loops, self.policy.block_ms / 1000 + 1)
        running = [t for sub in self._subs for t in sub.inflight.values()]
        await _settle(running, self.policy.shutdown_grace_seconds)
        await _settle(self._background, 0)
        self._loops, self._background = [], []
        for hook in self._on_stop:
            try:
                await hook()
            except Exception:  # noqa: BLE001 - the others still run
                log.exception("stop hook failed")
        if self._owns_redis:
            await self.redis.aclose()

    async def run(self) -> None:
        """Serve until SIGTERM or SIGINT, then stop gracefully."""
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await self.start()
        settle_after_startup()
        log.info("worker %s consuming %s", self.consumer, ", ".join(self.streams))
        try:
            await stop.wait()
        finally:
            await self.stop()

    # ------------------------------------------------------------ reading

    async def _ensure_group(self, sub: Subscription[Any]) -> None:
        if await sub.group.ensure():
            T.WORKER_GROUPS_CREATED.labels(sub.stream).inc()
            log.info("created consumer group %s on %s at 0", sub.group.group, sub.key)

    async def _wait_for_slot(self, sub: Subscription[Any]) -> bool:
        """True once a handler slot is free; False when stopping. The partitions of a
        stream wait in turn: a freed slot wakes the waiters in the order they began to
        wait, so the one that read last is served last."""
        slots = sub.slots
        while slots.free <= 0 and not self._stopping.is_set():
            slots.freed.clear()
            slots.waiting += 1
            try:
                await asyncio.wait_for(slots.freed.wait(), self.policy.block_ms / 1000)
            except TimeoutError:
                pass
            finally:
                slots.waiting -= 1
        return not self._stopping.is_set()

    async def _guarded(self, sub: Subscription[Any], read: Callable[[], Awaitable[Any]], backoff: list[float]) -> Any:
        """Run one read; on NOGROUP create the group again, on a Redis fault back off.
        None when the read failed."""
        try:
            reply = await read()
        except Exception as exc:  # noqa: BLE001 - a lost connection, a restart: keep reading
            if is_nogroup(exc):
                log.warning("consumer group %s of %s is gone; creating it again", sub.group.group, sub.key)
                try:
                    await self._ensure_group(sub)
                    return None
                except Exception as again:  # noqa: BLE001 - the next read tries again
                    exc = again
            log.warning("reading %s failed (%s); retrying in %.1f s", sub.key, exc, backoff[0])
            await self._pause(backoff[0])
            backoff[0] = min(backoff[0] * 2, 5.0)
            return None
        backoff[0] = 0.1
        return reply

    async def _consume_loop(self, sub: Subscription[Any]) -> None:
        """Take over dead consumers' entries every reclaim poll, read new ones between.
        One command at a time, each for at most the free slots, reserved before it is
        sent: never more than ``concurrency`` entries held across a stream's partitions,
        and reclaiming is never starved by reading."""
        backoff, cursor, reclaim_at = [0.1], "0-0", 0.0
        while await self._wait_for_slot(sub):
            count = min(sub.slots.free, self.policy.read_count)
            sub.slots.take(count)
            started = 0
            try:
                now = time.monotonic()
                if cursor != "0-0" or now >= reclaim_at:
                    reply = await self._guarded(
                        sub, partial(sub.group.reclaim, cursor, self.policy.reclaim_idle_ms, count), backoff
                    )
                    cursor, claimed = reply if reply is not None else ("0-0", [])
                    if cursor == "0-0":
                        reclaim_at = now + self.policy.reclaim_poll_ms / 1000
                    for entry_id, fields, delivered in claimed:
                        # Our own running entry (a heartbeat came late), or no count known
                        # (acknowledged meanwhile): not run now. The claim made it ours; it
                        # is taken over again after the idle time if it is still pending.
                        if entry_id in sub.inflight or delivered is None:
                            continue
                        T.WORKER_RECLAIMED.labels(sub.stream).inc()
                        self._dispatch(sub, entry_id, fields, delivered)
                        started += 1
                    continue
                # Block no longer than until the next reclaim (BLOCK 0 would wait forever).
                # While another partition waits for a slot this one holds, it does not
                # block on an empty key: it looks, and if nothing is there it steps aside.
                contended = sub.slots.waiting > 0
                block = None if contended else max(1, min(self.policy.block_ms, int((reclaim_at - now) * 1000)))
                entries = await self._guarded(sub, partial(sub.group.read, count, block), backoff)
                for entry_id, fields in entries or []:
                    self._dispatch(sub, entry_id, fields, 1)
                    started += 1
            finally:
                sub.slots.give(count - started)
            if contended and not started:
                await self._pause(CONTENDED_POLL_SECONDS)

    async def _pause(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stopping.wait(), seconds)
        except TimeoutError:
            pass

    async def _heartbeat_loop(self, sub: Subscription[Any]) -> None:
        """Keep the entries of running handlers young; report those another consumer took."""
        while True:
            await asyncio.sleep(self.policy.heartbeat_ms / 1000)
            ids = list(sub.inflight)
            if not ids:
                continue
            try:
                gone = await sub.group.heartbeat(ids)
            except Exception as exc:  # noqa: BLE001 - the next beat tries again
                log.warning("heartbeat on %s failed: %s", sub.key, exc)
                continue
            for entry_id in gone:
                if entry_id in sub.inflight:  # still running, so not acknowledged: taken
                    T.WORKER_TAKEN.labels(sub.stream).inc()
                    log.warning("%s %s was taken over by another consumer while running", sub.key, entry_id)

    async def _trim_loop(self, sub: Subscription[Any]) -> None:
        """Drop consumed entries older than the keep time (none for ``forget`` streams)."""
        keep_ms = 0 if sub.forget else self.policy.keep_consumed_ms
        # Ends on the stop flag, not only by cancellation: redis-py can swallow a
        # cancellation that lands inside a command (seen with redis-py 8).
        while not self._stopping.is_set():
            await self._pause(self.policy.trim_ms / 1000)
            if self._stopping.is_set():
                return
            try:
                trimmed = await sub.group.trim_consumed(int(time.time() * 1000) - keep_ms)
            except Exception as exc:  # noqa: BLE001 - the next round tries again
                log.warning("trimming %s failed: %s", sub.key, exc)
                continue
            if trimmed:
                T.STREAM_TRIMMED.labels(sub.stream).inc(trimmed)

    # ------------------------------------------------------------ handling

    def _dispatch(self, sub: Subscription[Any], entry_id: str, fields: Fields, count: int) -> None:
        task = asyncio.create_task(deliver(sub, self.policy.max_deliveries, self.redis, entry_id, fields, count))
        sub.inflight[entry_id] = task

        def done(_: asyncio.Task[None]) -> None:
            if sub.inflight.get(entry_id) is task:
                del sub.inflight[entry_id]
            sub.slots.give(1)

        task.add_done_callback(done)

CANCEL_WAIT_SECONDS = 1.0
# How long a partition that found nothing, while others waited for its slot, waits
# before it looks again (only when a stream has fewer handler slots than partitions).
CONTENDED_POLL_SECONDS = 0.1


async def _settle(tasks: list[asyncio.Task[Any]], timeout: float) -> None:
    """Wait up to ``timeout`` for ``tasks``, then cancel what is left."""
    tasks = [t for t in tasks if not t.done()]
    if not tasks:
        return
    if timeout > 0:
        await asyncio.wait(tasks, timeout=timeout)
    for t in tasks:
        if not t.done():
            t.cancel()
    _, left = await asyncio.wait(tasks, timeout=CANCEL_WAIT_SECONDS)
    for t in left:
        # The cancellation was lost inside a library call (redis-py can swallow one that
        # lands inside a command): cancel once more rather than wait for ever in a stop.
        log.warning("task %s outlived its cancellation; cancelling it again", t.get_name())
        t.cancel()
    if left:
        await asyncio.wait(left, timeout=CANCEL_WAIT_SECONDS)
    for t in tasks:
        if t.done() and not t.cancelled():
            t.exception()  # retrieved: no "exception was never retrieved" at exit


__all__ = ["Delivery", "Policy", "Worker", "consumer_name"]
