"""The LMTP listener against Python's own LMTP client: accepted once queued, unknown
recipients refused at RCPT, oversize refused at DATA."""

from __future__ import annotations

import asyncio
import base64
import smtplib

import pytest

from pmsearch.services.sync.config import Recipient, SyncConfig
from pmsearch.services.sync.lmtp import serve_lmtp
from pmsearch.shared import streams
from pmsearch.shared.bus import decode
from pmsearch.shared.messages import IngestRequested
from pmsearch.shared.settings import SyncSettings

from .conftest import mail

CONFIG = SyncConfig(lmtp=[Recipient(address="archive@acme.example", tenant="acme", mailbox="archive")])


@pytest.fixture
async def lmtp(redis, redis_url, unused_tcp_port):
    settings = SyncSettings(redis_url=redis_url, lmtp_port=unused_tcp_port, lmtp_max_message_bytes=4096)
    server = await serve_lmtp(settings, CONFIG, redis)
    yield unused_tcp_port
    server.stop()


def _wire(raw: bytes) -> bytes:
    """As an MTA sends it: CRLF line ends (smtplib leaves bytes as they are)."""
    return raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def _send(port: int, to: list[str], raw: bytes) -> dict:
    with smtplib.LMTP("127.0.0.1", port) as client:
        return client.sendmail("mta@acme.example", to, _wire(raw))


async def test_a_message_for_a_known_recipient_is_queued_before_250(lmtp, admin):
    raw = mail(1)
    refused = await asyncio.to_thread(_send, lmtp, ["archive@acme.example"], raw)
    assert refused == {}
    entries = await admin.xrange(streams.INGEST)
    assert len(entries) == 1
    queued = decode(entries[0][1], IngestRequested)
    assert (queued.tenant_id, queued.mailbox, queued.folder) == ("acme", "archive", "INBOX")
    assert base64.b64decode(queued.raw[0]).replace(b"\r\n", b"\n").rstrip() == raw.replace(b"\r\n", b"\n").rstrip()


async def test_an_unknown_recipient_is_refused_at_rcpt(lmtp, admin):
    with pytest.raises(smtplib.SMTPRecipientsRefused) as caught:
        await asyncio.to_thread(_send, lmtp, ["nobody@acme.example"], mail(1))
    assert caught.value.recipients["nobody@acme.example"][0] == 550
    assert await admin.xlen(streams.INGEST) == 0


def _send_without_size(port: int, raw: bytes) -> tuple[int, bytes]:
    """MAIL FROM without the SIZE parameter, so only DATA can see the size."""
    with smtplib.LMTP("127.0.0.1", port) as client:
        client.ehlo()  # LHLO
        client.mail("mta@acme.example")
        client.rcpt("archive@acme.example")
        return client.data(_wire(raw))


async def test_a_message_over_the_size_limit_is_refused_at_mail_and_at_data(lmtp, admin):
    big = mail(1, body="The forklift order, line by line.\n" * 300)
    with pytest.raises(smtplib.SMTPSenderRefused) as caught:  # its announced SIZE
        await asyncio.to_thread(_send, lmtp, ["archive@acme.example"], big)
    assert caught.value.smtp_code == 552
    code, _ = await asyncio.to_thread(_send_without_size, lmtp, big)
    assert code == 552
    assert await admin.xlen(streams.INGEST) == 0
