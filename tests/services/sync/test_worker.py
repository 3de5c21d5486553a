"""The sync stage's loop against a real Dovecot: a refused login waits, doubling, and is
logged once; a working source is kept current and its folder's state recorded."""

from __future__ import annotations

import asyncio
import logging

from pmsearch.services.sync import imap, worker
from pmsearch.services.sync.config import SyncConfig
from pmsearch.services.sync.worker import Syncer
from pmsearch.shared.settings import SyncSettings
from tests.fixtures.waiting import until

from .conftest import mail, source


async def _run_for(syncer: Syncer, src, seconds: float) -> None:
    task = asyncio.create_task(syncer.keep_current(src))
    await asyncio.sleep(seconds)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_refused_login_backs_off_and_is_logged_once(dovecot, redis, redis_url, monkeypatch, caplog):
    monkeypatch.setenv("TEST_IMAP_PASSWORD", "wrong")
    attempts = []
    opened = imap.Connection.open
    monkeypatch.setattr(worker.Connection, "open", lambda src: attempts.append(1) or opened(src))
    settings = SyncSettings(redis_url=redis_url, sync_backoff_first_seconds=0.2, sync_backoff_max_seconds=60)
    src = source(dovecot)
    syncer = Syncer(settings, SyncConfig(sources=[src]), redis)
    with caplog.at_level(logging.ERROR, logger="pmsearch.sync"):
        await _run_for(syncer, src, 8)
    # Dovecot delays a failed login by about 2 s; with waits of 0.2, 0.4, 0.8, ... s
    # that is at most four attempts in 8 s, never a tight loop.
    assert 2 <= len(attempts) <= 4
    assert [r.getMessage() for r in caplog.records] == ["sync acme/alice: the server refused the login"]
    state = await redis.hgetall("pm:sync:acme:alice:INBOX")
    assert state[b"error_kind"] == b"auth"


async def test_a_working_source_is_kept_current(dovecot, redis, redis_url, local_ingest):
    dovecot.deliver(mail(1))
    src = source(dovecot, poll_seconds=0.5, idle=False)
    syncer = Syncer(SyncSettings(redis_url=redis_url), SyncConfig(sources=[src]), redis)
    syncer.ingest = local_ingest  # the searcher's own ingest code, in process
    task = asyncio.create_task(syncer.keep_current(src))
    try:
        await until(lambda: local_ingest.subjects("INBOX") == ["Message 1"], "the first pass")
        dovecot.deliver(mail(2))  # after the first pass: only a later poll finds it
        await until(lambda: local_ingest.subjects("INBOX") == ["Message 1", "Message 2"], "the second message")
        state = await until(lambda: _synced_up_to(redis, b"2"), "the folder's state after the second message")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert local_ingest.subjects("INBOX") == ["Message 1", "Message 2"]
    assert state[b"synced_at"] and not state[b"error"]


async def _synced_up_to(redis, uid: bytes) -> dict | None:
    state = await redis.hgetall("pm:sync:acme:alice:INBOX")
    return state if state.get(b"last_uid") == uid else None
