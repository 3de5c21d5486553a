"""What the sync knows of each folder it keeps current, in Redis under ``pm:sync:*``.

Per (tenant, mailbox, server folder): a hash of the folder's UIDVALIDITY, the highest
UID handed to ingest, when the last sync ended and how, and a second hash from each UID
to the pmsearch message id ingest gave it, so that a UID gone from the server names the
message whose delivery ends. No mail is kept here; the message ids are the index's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from urllib.parse import quote

from redis.asyncio import Redis

PREFIX = "pm:sync:"


def folder_key(tenant: str, mailbox: str, server_folder: str) -> str:
    return PREFIX + ":".join(quote(part, safe="") for part in (tenant, mailbox, server_folder))


@dataclass
class FolderState:
    uidvalidity: int | None = None
    last_uid: int = 0
    uids: dict[int, str] = field(default_factory=dict)  # UID -> pmsearch message id
    # UIDs flagged \Deleted (not yet expunged): withdrawn, and fetched again if the flag
    # is cleared.
    deleted: set[int] = field(default_factory=set)


class FolderStore:
    """One folder's state: read whole, written as each batch lands (a restart fetches at
    most the batch that was in flight, and ingest absorbs it as duplicates)."""

    def __init__(self, redis: Redis, tenant: str, mailbox: str, server_folder: str) -> None:
        self.redis = redis
        self.key = folder_key(tenant, mailbox, server_folder)
        self.uids_key = self.key + ":uids"
        self.deleted_key = self.key + ":deleted"

    async def load(self) -> FolderState:
        head = {k.decode(): v.decode() for k, v in (await self.redis.hgetall(self.key)).items()}
        uids = {int(k): v.decode() for k, v in (await self.redis.hgetall(self.uids_key)).items()}
        deleted = {int(k) for k in await self.redis.hgetall(self.deleted_key)}
        return FolderState(
            uidvalidity=int(head["uidvalidity"]) if "uidvalidity" in head else None,
            last_uid=int(head.get("last_uid", 0)),
            uids=uids,
            deleted=deleted,
        )

    async def reset(self, uidvalidity: int) -> None:
        """A new UIDVALIDITY: every UID known so far names nothing any more.

        One key at a time (a cluster may hold them on two slots), the new UIDVALIDITY
        last: a sync that dies in between finds the old one still stored and resets again."""
        await self.redis.delete(self.uids_key)
        await self.redis.delete(self.deleted_key)
        await self.redis.hset(self.key, mapping={"uidvalidity": uidvalidity, "last_uid": 0})

    async def advance(self, last_uid: int, mapped: dict[int, str]) -> None:
        if mapped:
            await self.redis.hset(self.uids_key, mapping={str(u): m for u, m in mapped.items()})
        await self.redis.hset(self.key, "last_uid", last_uid)

    async def forget(self, uids: list[int]) -> None:
        if uids:
            await self.redis.hdel(self.uids_key, *[str(u) for u in uids])

    async def mark_deleted(self, uids: list[int]) -> None:
        """UIDs now flagged \\Deleted: out of the UID map, into the deleted set."""
        if uids:
            await self.forget(uids)
            await self.redis.hset(self.deleted_key, mapping={str(u): "" for u in uids})

    async def unmark_deleted(self, uids: list[int]) -> None:
        if uids:
            await self.redis.hdel(self.deleted_key, *[str(u) for u in uids])

    async def succeeded(self) -> None:
        await self.redis.hset(self.key, mapping={"synced_at": f"{time.time():.3f}", "error": "", "error_kind": ""})

    async def failed(self, kind: str, line: str) -> None:
        await self.redis.hset(self.key, mapping={"error": line, "error_kind": kind})
