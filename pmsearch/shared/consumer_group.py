"""One consumer of one stream's consumer group: the Redis commands the worker runtime
(:mod:`pmsearch.shared.worker`) sends, and nothing else. Each must be granted to the stage's
Redis user on its own input streams (``deploy/redis/users.acl.in``): ``XGROUP CREATE``,
``XREADGROUP``, ``XAUTOCLAIM``, ``XPENDING``, ``XCLAIM``, ``XACK``, ``XINFO GROUPS``,
``XTRIM``, and ``XADD``/``XLEN``
on ``<stream>:dead`` (one for all of a stream's partitions).
"""

from __future__ import annotations

import json
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from pmsearch.shared.bus import DATA_FIELD, dead_letter_entry
from pmsearch.shared.streams import logical

Fields = dict[Any, Any]


def text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def id_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def is_nogroup(exc: Exception) -> bool:
    return isinstance(exc, ResponseError) and str(exc).startswith("NOGROUP")


def envelope_data(fields: Fields) -> str:
    """The message JSON inside an entry's envelope (``pmsearch.shared.bus.encode``); ValueError
    when the entry has none."""
    raw = fields.get(DATA_FIELD.encode(), fields.get(DATA_FIELD))
    if raw is None:
        raise ValueError("stream entry has no data field")
    try:
        data = json.loads(raw)["data"]
    except (TypeError, KeyError) as exc:
        raise ValueError(f"not a message envelope: {exc!r}") from exc
    if not isinstance(data, str):
        raise ValueError("envelope data is not a JSON string")
    return data


class ConsumerGroup:
    def __init__(self, redis: Redis, stream: str, group: str, consumer: str) -> None:
        self.redis = redis
        self.stream = stream
        self.group = group
        self.consumer = consumer

    async def ensure(self) -> bool:
        """Create the group at ``0`` (with the stream, if missing); True if it was new.
        At ``0``, not ``$``: entries added while the group was missing are read, not skipped."""
        try:
            await self.redis.xgroup_create(self.stream, self.group, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
            return False
        return True

    async def read(self, count: int, block_ms: int) -> list[tuple[str, Fields]]:
        """New entries (never delivered in this group), at most ``count``."""
        reply = await self.redis.xreadgroup(
            self.group, self.consumer, {self.stream: ">"}, count=count, block=block_ms
        )
        found: list[tuple[str, Fields]] = []
        for _, entries in reply.items() if isinstance(reply, dict) else reply or []:
            found += [(text(i), f) for i, f in entries]
        return found

    async def reclaim(
        self, cursor: str, min_idle_ms: int, count: int
    ) -> tuple[str, list[tuple[str, Fields, int | None]]]:
        """Take over entries idle at least ``min_idle_ms`` (their consumer is dead), from
        ``cursor`` on; each with Redis's delivery count (this takeover included), None when
        unknown. Returns the next cursor (``0-0`` after a full pass)."""
        reply = await self.redis.xautoclaim(
            self.stream, self.group, self.consumer, min_idle_ms, start_id=cursor, count=count
        )
        claimed = [(text(i), f) for i, f in reply[1] if f is not None]
        counts = await self.delivery_counts([i for i, _ in claimed]) if claimed else {}
        return text(reply[0]), [(i, f, counts.get(i)) for i, f in claimed]

    async def delivery_counts(self, ids: list[str]) -> dict[str, int]:
        """XPENDING's times-delivered of this consumer's entries among ``ids``."""
        rows = await self.redis.xpending_range(
            self.stream, self.group, min=min(ids, key=id_key), max=max(ids, key=id_key),
            count=len(ids) + 10_000, consumername=self.consumer,
        )
        return {text(r["message_id"]): int(r["times_delivered"]) for r in rows}

    async def heartbeat(self, ids: list[str]) -> set[str]:
        """Reset the idle time of those of ``ids`` this consumer still holds (``XCLAIM ...
        JUSTID`` to itself, which is not a delivery); returns the ids it no longer holds
        (acknowledged, or taken over by another consumer)."""
        held = set(await self.delivery_counts(ids))
        mine = [i for i in ids if i in held]
        if mine:
            await self.redis.xclaim(self.stream, self.group, self.consumer, 0, mine, justid=True)
        return set(ids) - held

    async def ack(self, entry_id: str) -> None:
        await self.redis.xack(self.stream, self.group, entry_id)

    async def forget(self, entry_id: str) -> None:
        """Drop a handled (acknowledged) entry from the stream now, with every consumed
        one before it (:meth:`trim_consumed`); while an older one is still pending, at
        the trim after it is done. Trimmed, not deleted (``XDEL``): a deleted entry at or
        after a group's last-delivered id makes Redis report that group's lag as unknown,
        and an autoscaler reads that lag."""
        ms, seq = id_key(entry_id)
        await self.trim_consumed(older_than_ms=ms + 1)

    async def dead_letter(
        self, entry_id: str, fields: Fields, error: str, deliveries: int, *, keep_payload: bool = True
    ) -> None:
        """Park the entry (its raw envelope, for a replay, unless ``keep_payload`` is
        False) in ``<stream>:dead``, then acknowledge it."""
        raw = fields.get(DATA_FIELD.encode(), fields.get(DATA_FIELD))
        payload = raw if raw is not None else {text(k): text(v) for k, v in fields.items()}
        if not keep_payload:
            payload = f"(not kept: entry {entry_id} of {self.stream})"
        # One dead-letter stream for all of a stream's partitions: operators read one.
        await dead_letter_entry(self.redis, logical(self.stream), payload, error, deliveries)
        await self.ack(entry_id)

    async def trim_consumed(self, older_than_ms: int) -> int:
        """Delete the entries that every group of the stream has consumed (delivered and
        acknowledged) and that are older than ``older_than_ms`` (Unix ms); the number
        deleted. An entry not yet delivered to some group, or pending in one, is kept,
        and so is everything after it (``XTRIM MINID``).

        The groups' last-delivered ids are read before their pending entries: an entry
        delivered in between is newer than the id read, so it is kept either way."""
        groups = await self.redis.xinfo_groups(self.stream)
        if not groups:
            return 0  # nobody reads it yet: nothing is consumed
        floor = (max(older_than_ms, 0), 0)
        for g in groups:
            ms, seq = id_key(text(g["last-delivered-id"]))
            floor = min(floor, (ms, seq + 1))
        for g in groups:
            summary = await self.redis.xpending(self.stream, text(g["name"]))
            if summary.get("pending"):
                floor = min(floor, id_key(text(summary["min"])))
        if floor <= (0, 1):
            return 0
        return int(await self.redis.xtrim(self.stream, minid=f"{floor[0]}-{floor[1]}", approximate=False))
