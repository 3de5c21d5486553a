r"""Keeping one server folder current: the sync model (docs/design.md, "Mail arrives by
itself").

Per folder the sync keeps UIDVALIDITY, the highest UID handed to ingest, and which
pmsearch message each UID became (:mod:`.state`). One pass:

1. Select the folder. A UIDVALIDITY other than the one kept means every kept UID names
   nothing now: the state is reset and the whole folder is read again. Ingest knows a
   message by its Message-ID and content digest, so nothing is indexed twice; what the
   old UIDs named and the new ones do not is withdrawn.
2. List the folder's UIDs. A kept UID the server no longer lists was expunged, or moved
   away: its delivery to this folder is withdrawn (``pm:withdrawn``). A message moved to
   another synced folder is delivered there when that folder is read: one message, its
   new delivery. A message flagged ``\Deleted`` (not yet expunged) is withdrawn too, and
   delivered again if the flag is cleared.
3. Fetch the UIDs above the highest kept, smallest first, in batches: a message larger
   than the limit is skipped (counted, logged by UID), the rest go to ingest
   (``pm:ingest``), and the state advances after each batch, so a restart fetches at
   most the batch that was in flight again, which ingest absorbs as duplicates.

The connection and the ingest are passed in: this module holds the order of things,
nothing of IMAP's or Redis's wire.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from pmsearch.services.sync.config import FolderMap, Source
from pmsearch.services.sync.imap import Connection
from pmsearch.services.sync.state import FolderStore
from pmsearch.shared.messages import IngestItem

log = logging.getLogger("pmsearch.sync")


class Ingest(Protocol):
    async def ingest(self, tenant: str, mailbox: str, folder: str, raws: list[bytes]) -> list[IngestItem]: ...

    async def withdraw(self, tenant: str, mailbox: str, folder: str, message_ids: list[str]) -> None: ...


@dataclass
class FolderReport:
    folder: str
    indexed: int = 0
    duplicate: int = 0
    failed: int = 0
    too_large: int = 0
    withdrawn: int = 0
    reset: bool = False

    @property
    def fetched(self) -> int:
        return self.indexed + self.duplicate + self.failed


async def sync_folder(
    conn: Connection, store: FolderStore, ingest: Ingest, source: Source, fmap: FolderMap, *,
    max_bytes: int, batch: int, progress: Callable[[int], None] = lambda left: None,
) -> FolderReport:
    """One pass over one folder (see the module docstring). ``progress`` hears how many
    messages are left to hand to ingest, before each batch and at the end (0)."""
    report = FolderReport(fmap.server)
    status = await asyncio.to_thread(conn.select, fmap.server)
    state = await store.load()
    stale: dict[int, str] = {}
    if state.uidvalidity != status.uidvalidity:
        report.reset = state.uidvalidity is not None
        stale, state.uids, state.last_uid = state.uids, {}, 0
        await store.reset(status.uidvalidity)
    on_server = await asyncio.to_thread(conn.uids)
    flagged = await asyncio.to_thread(conn.deleted)
    listed = set(on_server) - flagged
    gone = [uid for uid in state.uids if uid not in listed]
    if gone:
        kept = {m for uid, m in state.uids.items() if uid in listed}
        ended = sorted({state.uids[uid] for uid in gone} - kept)
        await _withdraw(ingest, source, fmap, ended, report)
        await store.forget([uid for uid in gone if uid not in flagged])
        await store.mark_deleted([uid for uid in gone if uid in flagged])
    # \Deleted at first sight is not fetched; one whose flag was cleared is fetched again.
    await store.mark_deleted([uid for uid in on_server if uid > state.last_uid and uid in flagged])
    restored = sorted(uid for uid in state.deleted if uid in listed)
    await store.unmark_deleted([uid for uid in state.deleted if uid not in flagged])
    new = sorted({*restored, *(uid for uid in on_server if uid > state.last_uid and uid not in flagged)})
    sizes = await asyncio.to_thread(conn.sizes, new) if new else {}
    seen: set[str] = set()
    for start in range(0, len(new), batch):
        progress(len(new) - start)
        chunk = new[start:start + batch]
        wanted = [uid for uid in chunk if sizes.get(uid, 0) <= max_bytes]
        for uid in chunk:
            if uid not in wanted:
                report.too_large += 1
                log.warning("sync %s %s: UID %d is %d bytes, over the limit of %d: not fetched",
                            source.name, fmap.server, uid, sizes.get(uid, 0), max_bytes)
        mapped: dict[int, str] = {}
        if wanted:
            raws = await asyncio.to_thread(conn.fetch, wanted)
            order = [uid for uid in wanted if uid in raws]
            items = await ingest.ingest(source.tenant, source.mailbox, fmap.target, [raws[uid] for uid in order])
            for item in items:
                uid = order[item.index]
                if item.status == "error" or item.message_id is None:
                    report.failed += 1
                    log.warning("sync %s %s: UID %d not imported: %s", source.name, fmap.server, uid, item.error)
                    continue
                mapped[uid] = item.message_id
                seen.add(item.message_id)
                report.indexed += item.status == "indexed"
                report.duplicate += item.status == "duplicate"
        await store.advance(max(chunk[-1], state.last_uid), mapped)
    progress(0)
    if on_server and max(on_server) > state.last_uid:
        await store.advance(max(on_server), {})  # past new UIDs flagged \Deleted, not fetched
    if stale:
        # After a UIDVALIDITY change: what the old UIDs named and the new ones do not.
        await _withdraw(ingest, source, fmap, sorted(set(stale.values()) - seen), report)
    await store.succeeded()
    return report


async def _withdraw(ingest: Ingest, source: Source, fmap: FolderMap, message_ids: list[str],
                    report: FolderReport) -> None:
    for start in range(0, len(message_ids), 500):
        await ingest.withdraw(source.tenant, source.mailbox, fmap.target, message_ids[start:start + 500])
    report.withdrawn += len(message_ids)
