"""One folder kept current against a real Dovecot: first and incremental sync, expunge,
move between folders, UIDVALIDITY change, size limit, and a restart mid-folder."""

from __future__ import annotations

import asyncio
import time

from pmsearch.services.sync.config import FolderMap
from pmsearch.services.sync.imap import Connection
from pmsearch.services.sync.service import sync_folder
from pmsearch.services.sync.state import FolderStore

from .conftest import mail, source

INBOX, ARCHIVE = FolderMap(server="INBOX"), FolderMap(server="Archive", folder="archive")


async def _sync(dovecot, redis, ingest, fmap=INBOX, *, batch=20, max_bytes=1_000_000, src=None, progress=None):
    src = src or source(dovecot, INBOX, ARCHIVE)
    conn = await asyncio.to_thread(Connection.open, src)
    try:
        store = FolderStore(redis, src.tenant, src.mailbox, fmap.server)
        return await sync_folder(conn, store, ingest, src, fmap, max_bytes=max_bytes, batch=batch,
                                 progress=progress or (lambda left: None))
    finally:
        conn.close()


async def test_first_sync_imports_every_message_and_the_next_only_what_is_new(dovecot, redis, local_ingest):
    for n in range(5):
        dovecot.deliver(mail(n))
    left: list[int] = []
    first = await _sync(dovecot, redis, local_ingest, batch=2, progress=left.append)
    assert (first.indexed, first.duplicate, first.failed) == (5, 0, 0)
    assert left == [5, 3, 1, 0]  # what is left to hand to ingest, batch by batch
    assert local_ingest.batches == [2, 2, 1]
    dovecot.deliver(mail(5))
    second = await _sync(dovecot, redis, local_ingest)
    assert (second.indexed, second.duplicate, local_ingest.batches[-1]) == (1, 0, 1)
    assert len(local_ingest.subjects("INBOX")) == 6


async def test_a_message_expunged_on_the_server_stops_being_found_in_its_folder(dovecot, redis, local_ingest):
    for n in range(3):
        dovecot.deliver(mail(n))
    await _sync(dovecot, redis, local_ingest)
    with dovecot.client() as c:
        c.select_folder("INBOX")
        uid = c.search(["SUBJECT", "Message 1"])[0]
        c.delete_messages([uid])
        c.expunge()
    report = await _sync(dovecot, redis, local_ingest)
    assert report.withdrawn == 1
    assert local_ingest.subjects("INBOX") == ["Message 0", "Message 2"]


async def test_a_message_flagged_deleted_is_hidden_until_the_flag_is_cleared(dovecot, redis, local_ingest):
    for n in range(2):
        dovecot.deliver(mail(n))
    await _sync(dovecot, redis, local_ingest)
    with dovecot.client() as c:
        c.select_folder("INBOX")
        uid = c.search(["SUBJECT", "Message 1"])[0]
        c.add_flags([uid], [b"\\Deleted"])
    dovecot.deliver(mail(2))
    with dovecot.client() as c:
        c.select_folder("INBOX")
        c.add_flags(c.search(["SUBJECT", "Message 2"]), [b"\\Deleted"])  # deleted before it was ever synced
    hidden = await _sync(dovecot, redis, local_ingest)
    assert (hidden.withdrawn, hidden.indexed) == (1, 0)
    assert local_ingest.subjects("INBOX") == ["Message 0"]
    with dovecot.client() as c:
        c.select_folder("INBOX")
        c.remove_flags(c.search(["ALL"]), [b"\\Deleted"])
    back = await _sync(dovecot, redis, local_ingest)
    assert (back.indexed, back.duplicate) == (1, 1)
    assert local_ingest.subjects("INBOX") == ["Message 0", "Message 1", "Message 2"]


async def test_a_moved_message_is_one_message_with_its_new_delivery(dovecot, redis, local_ingest):
    dovecot.deliver(mail(1))
    dovecot.deliver(mail(2))
    await _sync(dovecot, redis, local_ingest, INBOX)
    with dovecot.client() as c:
        c.create_folder("Archive")
        c.select_folder("INBOX")
        c.move(c.search(["SUBJECT", "Message 1"]), "Archive")
    inbox = await _sync(dovecot, redis, local_ingest, INBOX)
    archive = await _sync(dovecot, redis, local_ingest, ARCHIVE)
    assert (inbox.withdrawn, archive.indexed, archive.duplicate) == (1, 0, 1)
    assert local_ingest.subjects("INBOX") == ["Message 2"]
    assert local_ingest.subjects("archive") == ["Message 1"]


async def test_a_new_uidvalidity_reads_the_folder_again_without_duplicates(dovecot, redis, local_ingest):
    raws = [mail(n) for n in range(3)]
    for raw in raws:
        dovecot.deliver(raw, "Archive")
    await _sync(dovecot, redis, local_ingest, ARCHIVE)
    # The folder is rebuilt on the server (deleted, made again, refilled without one
    # message): a new UIDVALIDITY, and UIDs from 1 again.
    with dovecot.client() as c:
        before = c.select_folder("Archive")[b"UIDVALIDITY"]
        c.unselect_folder()
        c.delete_folder("Archive")
    time.sleep(1.1)  # Dovecot's UIDVALIDITY is the time in seconds
    for raw in raws[:2]:
        dovecot.deliver(raw, "Archive")
    with dovecot.client() as c:
        assert c.select_folder("Archive")[b"UIDVALIDITY"] != before
    report = await _sync(dovecot, redis, local_ingest, ARCHIVE)
    assert report.reset and (report.indexed, report.duplicate, report.withdrawn) == (0, 2, 1)
    assert local_ingest.subjects("archive") == ["Message 0", "Message 1"]


async def test_a_message_over_the_size_limit_is_not_fetched(dovecot, redis, local_ingest):
    dovecot.deliver(mail(1))
    dovecot.deliver(mail(2, body="x" * 5000))
    report = await _sync(dovecot, redis, local_ingest, max_bytes=3000)
    assert (report.indexed, report.too_large) == (1, 1)


class _DiesAfter:
    """The real ingest, killed (as a process would be) after ``n`` batches."""

    def __init__(self, inner, n: int) -> None:
        self.inner, self.left = inner, n

    async def ingest(self, *args):
        if self.left == 0:
            raise asyncio.CancelledError
        self.left -= 1
        return await self.inner.ingest(*args)

    async def withdraw(self, *args):
        return await self.inner.withdraw(*args)


async def test_a_sync_cut_mid_folder_resumes_and_imports_every_message_once(dovecot, redis, local_ingest):
    for n in range(7):
        dovecot.deliver(mail(n))
    try:
        await _sync(dovecot, redis, _DiesAfter(local_ingest, 2), batch=2)
    except asyncio.CancelledError:
        pass
    report = await _sync(dovecot, redis, local_ingest, batch=2)
    assert report.indexed == 3  # the four of the two batches that landed are not fetched again
    assert len(local_ingest.subjects("INBOX")) == 7
