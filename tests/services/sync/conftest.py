"""A real Dovecot, a real Redis, and the searcher's real ingester over a Qdrant Edge
index, for the sync's tests."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from pmsearch.services.searcher.index.base import IndexFilter
from pmsearch.services.searcher.ingest.service import Ingester
from pmsearch.services.searcher.ingest.withdraw import withdraw
from pmsearch.services.sync.config import FolderMap, Source
from pmsearch.shared.messages import IngestItem
from pmsearch.testing.dovecot import Dovecot, dovecot_server
from tests.services.searcher.ingest.conftest import DIM, HashEmbedder

PASSWORD = "correct horse battery staple"
T0 = datetime(2024, 4, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def dovecot(tmp_path: Path) -> Iterator[Dovecot]:
    with dovecot_server(tmp_path / "dovecot", {"alice": PASSWORD}) as server:
        yield server


@pytest.fixture
def redis_url(acl_redis) -> str:
    """Redis with the shipped ACL file, as the sync stage's own user; the sync's keys and
    the streams it feeds emptied first (the server is shared by the session)."""
    admin = acl_redis.redis_client()
    for key in [*admin.scan_iter("pm:sync:*"), "pm:ingest", "pm:withdrawn"]:
        admin.delete(key)
    password = acl_redis.secrets.passwords["sync"]
    return f"redis://sync:{password}@127.0.0.1:{acl_redis.redis_port}/0"


@pytest.fixture
async def redis(redis_url: str):
    client = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


@pytest.fixture
async def admin(acl_redis):
    """What the searcher or an operator reads, which the sync user may not."""
    client = aioredis.Redis(port=acl_redis.redis_port, username="admin", password=acl_redis.secrets.passwords["admin"])
    yield client
    await client.aclose()


def source(server: Dovecot, *folders: FolderMap, tls: str = "starttls", trusted: bool = True, **kw) -> Source:
    return Source(
        tenant="acme", mailbox="alice", host="127.0.0.1",
        port=server.imap_port if tls == "starttls" else server.imaps_port, tls=tls,
        ca_file=server.cert if trusted else None, user="alice", password_env="TEST_IMAP_PASSWORD",
        folders=list(folders) or [FolderMap(server="INBOX")], **kw,
    )


def mail(n: int, subject: str | None = None, body: str | None = None) -> bytes:
    m = EmailMessage()
    m["From"] = "Bob Sender <bob@example.org>"
    m["To"] = "alice@example.org"
    m["Subject"] = subject or f"Message {n}"
    m["Date"] = format_datetime(T0 + timedelta(minutes=n))
    m["Message-ID"] = make_msgid(f"m{n}", "example.org")
    m.set_content(body or f"This is message number {n} about the forklift order {1000 + n}.")
    return bytes(m)


class LocalIngest:
    """The searcher's own ingest and withdrawal code, called in process on a real index:
    what ``pm:ingest`` and ``pm:withdrawn`` run at the searcher."""

    def __init__(self, index) -> None:
        self.index = index
        self.ingester = Ingester(index, HashEmbedder(), chunk_chars=800)
        self.batches: list[int] = []

    async def ingest(self, tenant: str, mailbox: str, folder: str, raws: list[bytes]) -> list[IngestItem]:
        self.batches.append(len(raws))
        report = self.ingester.ingest(tenant, mailbox, [(r, folder, f"#{i}") for i, r in enumerate(raws)])
        return report.items

    async def withdraw(self, tenant: str, mailbox: str, folder: str, message_ids: list[str]) -> None:
        withdraw(self.index, tenant, mailbox, folder, message_ids)

    def subjects(self, folder: str | None = None) -> list[str]:
        flt = IndexFilter(tenant_id="acme", mailboxes=("alice",), folders=(folder,) if folder else None)
        return sorted({p.subject for p in self.index.scroll(flt) if p.chunk_no == 0 and p.kind == "body"})


@pytest.fixture
def local_ingest(tmp_path: Path) -> Iterator[LocalIngest]:
    from pmsearch.services.searcher.index.edge import EdgeIndex

    index = EdgeIndex(tmp_path / "index", DIM)
    yield LocalIngest(index)
    index.close()


@pytest.fixture(autouse=True)
def imap_password(monkeypatch) -> None:
    monkeypatch.setenv("TEST_IMAP_PASSWORD", PASSWORD)


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()
