"""LMTP delivery (RFC 2033) for sites whose MTA hands mail to an archive: a configured
recipient address maps to a tenant, mailbox and folder; a message accepted for it is
queued on the searcher's ingest stream, and each recipient's ``250`` is sent only once
its queue entry is written (Redis, with its append-only file, holds it from then on).

Unknown recipients are refused at RCPT (``550``), a message over the size limit at DATA
(``552``, by aiosmtpd's own limit), and a recipient whose entry cannot be written gets
``451`` (try again later): the MTA keeps the message and retries.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import uuid
from typing import Any

from aiosmtpd.lmtp import LMTP
from redis.asyncio import Redis
from redis.exceptions import RedisError

from pmsearch.services.sync import metrics
from pmsearch.services.sync.config import SyncConfig
from pmsearch.shared import streams
from pmsearch.shared.bus import publish
from pmsearch.shared.messages import IngestRequested
from pmsearch.shared.settings import SyncSettings

log = logging.getLogger("pmsearch.lmtp")


class ArchiveHandler:
    """aiosmtpd's handler hooks: RCPT checks the address, DATA queues the message."""

    def __init__(self, config: SyncConfig, redis: Redis) -> None:
        self.config = config
        self.redis = redis

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, options: list[str]) -> str:
        if self.config.recipient(address) is None:
            metrics.LMTP.labels("unknown_recipient").inc()
            return "550 5.1.1 No such recipient here"
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        raw = envelope.original_content or b""
        replies = []
        for address in envelope.rcpt_tos:
            recipient = self.config.recipient(address)
            assert recipient is not None  # checked at RCPT
            message = IngestRequested(
                request_id=f"lmtp-{uuid.uuid4().hex}", tenant_id=recipient.tenant, mailbox=recipient.mailbox,
                folder=recipient.folder, raw=[base64.b64encode(raw).decode()],
            )
            try:
                await publish(self.redis, streams.INGEST, message)
            except RedisError as exc:
                metrics.LMTP.labels("queue_failed").inc()
                log.error("lmtp: cannot queue a message for %s/%s: %s", recipient.tenant, recipient.mailbox,
                          type(exc).__name__)
                replies.append("451 4.3.0 Cannot queue the message now, try again later")
                continue
            metrics.LMTP.labels("accepted").inc()
            replies.append("250 2.0.0 Queued for indexing")
        # LMTP answers DATA once per accepted recipient, in RCPT order.
        return "\r\n".join(replies)


class LmtpServer:
    def __init__(self, server: asyncio.base_events.Server) -> None:
        self.server = server

    def stop(self) -> None:
        self.server.close()


async def serve_lmtp(settings: SyncSettings, config: SyncConfig, redis: Redis) -> LmtpServer:
    """Listen on ``PM_LMTP_HOST:PM_LMTP_PORT`` on the running event loop."""
    handler = ArchiveHandler(config, redis)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: LMTP(handler, data_size_limit=settings.lmtp_max_message_bytes, hostname="pmsearch", ident="pmsearch"),
        host=settings.lmtp_host, port=settings.lmtp_port,
    )
    return LmtpServer(server)
