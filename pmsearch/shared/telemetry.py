"""Logging, and the worker runtime's metrics (served on a worker's operator port by
:mod:`pmsearch.shared.health`; the gateway serves ``/metrics`` itself)."""

from __future__ import annotations

import asyncio
import time

from prometheus_client import Counter, Gauge, Histogram

from pmsearch.shared.logging_setup import configure, secret_values
from pmsearch.shared.settings import ServiceSettings
from pmsearch.shared.streams import dead_letter, logical


def setup_logging(settings: ServiceSettings, service: str) -> None:
    """JSON (or text) lines for the whole process, its secrets redacted (pmsearch/shared/logging_setup.py)."""
    configure(settings.log_level, settings.log_format, service, secret_values(settings))


# Stream health, reported by the worker runtime (pmsearch/shared/worker.py) for every stream a
# stage consumes. Lag is what no consumer has read yet; pending is read but not yet
# acknowledged, and its age (of the oldest such entry) shows work stuck in a consumer.
STREAM_LAG = Gauge("pm_stream_lag", "Entries not yet delivered to the stage's consumer group.", ["stream"])
STREAM_PENDING = Gauge("pm_stream_pending", "Entries delivered but not yet acknowledged.", ["stream"])
STREAM_PENDING_AGE = Gauge(
    "pm_stream_pending_age_seconds", "Age of the oldest entry delivered but not yet acknowledged (0: none).", ["stream"]
)
# Idle time since the last delivery or heartbeat, of the most idle pending entry: a live
# handler's entry is heartbeated every second, so only an entry no live consumer holds
# (and none took over) stays idle past the reclaim time.
STREAM_PENDING_IDLE = Gauge(
    "pm_stream_pending_idle_seconds", "Longest idle time of an entry delivered but not acknowledged (0: none).",
    ["stream"],
)
DEAD_LETTERS = Gauge("pm_dead_letters", "Entries in the stream's dead-letter stream.", ["stream"])
# The idle time past which this process takes over a pending entry (XAUTOCLAIM): the
# alert on pending idle time compares against it, so it follows the configured value.
RECLAIM_IDLE = Gauge(
    "pm_worker_reclaim_idle_seconds", "Idle time after which this process takes over another consumer's entry.",
    ["stream"],
)
# The most idle of this many pending entries is reported (XPENDING's oldest first).
IDLE_SAMPLE = 100

# What the worker runtime did with entries, by input stream. ``reason`` is a fixed code.
WORKER_DROPPED = Counter(
    "pm_worker_dropped_total", "Entries acknowledged without work: deadline passed or run already finished.",
    ["stream", "reason"],
)
WORKER_DEAD_LETTERED = Counter(
    "pm_worker_dead_lettered_total", "Entries moved to the dead-letter stream, by reason.", ["stream", "reason"]
)
WORKER_RECLAIMED = Counter(
    "pm_worker_reclaimed_total", "Entries taken over from a consumer that stopped heartbeating.", ["stream"]
)
WORKER_FAILURES = Counter(
    "pm_worker_handler_failures_total", "Handler runs that raised; the entry stays pending for a retry.", ["stream"]
)
WORKER_TAKEN = Counter(
    "pm_worker_taken_total", "Running handlers whose entry another consumer took over (a late heartbeat).", ["stream"]
)
STREAM_TRIMMED = Counter(
    "pm_stream_trimmed_total", "Consumed entries trimmed from an input stream (by age, or handled raw mail).", ["stream"]
)
WORKER_GROUPS_CREATED = Counter(
    "pm_worker_groups_created_total", "Consumer groups (re-)created, at start or after NOGROUP.", ["stream"]
)
# Every delivery's end, by input stream (so by stage): ok (handled and acknowledged),
# dropped (stale, acknowledged unrun), failed (raised; left for a retry), dead_lettered.
WORKER_HANDLED = Counter("pm_worker_handled_total", "Deliveries by how they ended.", ["stream", "result"])
HANDLE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60)
WORKER_HANDLE_SECONDS = Histogram(
    "pm_worker_handle_seconds", "Time a handler ran for one delivery, by input stream.", ["stream"],
    buckets=HANDLE_BUCKETS,
)
HANDLED_RESULTS = ("ok", "dropped", "failed", "dead_lettered")


def declare_stream(stream: str, reclaim_idle_seconds: float) -> None:
    """Create an input stream's delivery series at zero when it is subscribed (a series
    born at its first delivery would hide that delivery from ``rate()``), and report the
    idle time after which this process takes over its entries."""
    for result in HANDLED_RESULTS:
        WORKER_HANDLED.labels(stream, result)
    WORKER_HANDLE_SECONDS.labels(stream)
    RECLAIM_IDLE.labels(stream).set(reclaim_idle_seconds)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


async def report_stream(redis, name: str, keys: list[str], group: str) -> None:
    """Set the gauges of one stream, read through ``group`` in each of its ``keys`` (the
    stream, or its partitions): lag and pending summed, ages and idle times the oldest."""
    lag = pending = 0
    age = idle = 0.0
    for key in keys:
        for g in await redis.xinfo_groups(key):
            if _text(g["name"]) == group:
                lag += g.get("lag") or 0
                pending += g.get("pending") or 0
        summary = await redis.xpending(key, group)
        oldest = summary.get("min") if summary.get("pending") else None
        if oldest:
            age = max(age, time.time() - int(_text(oldest).split("-")[0]) / 1000)
            rows = await redis.xpending_range(key, group, min="-", max="+", count=IDLE_SAMPLE)
            idle = max(idle, max((r["time_since_delivered"] for r in rows), default=0) / 1000)
    STREAM_LAG.labels(name).set(lag)
    STREAM_PENDING.labels(name).set(pending)
    STREAM_PENDING_AGE.labels(name).set(age)
    STREAM_PENDING_IDLE.labels(name).set(idle)
    DEAD_LETTERS.labels(name).set(await redis.xlen(dead_letter(name)))


async def report_streams(redis, group_of: dict[str, str], interval: float = 5.0) -> None:
    """Keep the stream gauges current (``group_of``: each input key's group); runs for
    the life of the worker."""
    by_stream: dict[str, tuple[list[str], str]] = {}
    for key, group in group_of.items():
        by_stream.setdefault(logical(key), ([], group))[0].append(key)
    while True:
        for name, (keys, group) in by_stream.items():
            try:
                await report_stream(redis, name, keys, group)
            except Exception:  # a missing stream or a blip: report next round
                pass
        await asyncio.sleep(interval)
