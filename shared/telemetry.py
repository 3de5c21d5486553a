"""Logging and the Prometheus endpoint for worker processes (the gateway serves
``/metrics`` itself)."""

from __future__ import annotations

import asyncio
import logging

from prometheus_client import Gauge, start_http_server

from shared.streams import dead_letter


def setup_logging(level: str = "INFO") -> None:
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )


def serve_metrics(port: int) -> None:
    start_http_server(port, addr="127.0.0.1")


# Stream health, reported by each stage for the streams it consumes.
STREAM_LAG = Gauge("pm_stream_lag", "Entries not yet delivered to the stage's consumer group.", ["stream"])
STREAM_PENDING = Gauge("pm_stream_pending", "Entries delivered but not yet acknowledged.", ["stream"])
DEAD_LETTERS = Gauge("pm_dead_letters", "Entries in the stream's dead-letter stream.", ["stream"])


async def report_streams(redis, names: list[str], group_of: dict[str, str], interval: float = 5.0) -> None:
    """Keep the stream gauges current; runs for the life of the worker."""
    while True:
        for name in names:
            try:
                for g in await redis.xinfo_groups(name):
                    if g["name"] in (group_of[name], group_of[name].encode()):
                        STREAM_LAG.labels(name).set(g.get("lag") or 0)
                        STREAM_PENDING.labels(name).set(g.get("pending") or 0)
                DEAD_LETTERS.labels(name).set(await redis.xlen(dead_letter(name)))
            except Exception:  # a missing stream or a blip: report next round
                pass
        await asyncio.sleep(interval)
