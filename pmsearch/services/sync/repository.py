"""The sync's way into the index: ingest requests on ``pm:ingest`` (the searcher's
reply read from ``pm:reply:sync-<id>``) and withdrawals on ``pm:withdrawn``. The sync
never writes the index itself."""

from __future__ import annotations

import base64
import uuid

from redis.asyncio import Redis

from pmsearch.services.sync.errors import ServerError
from pmsearch.shared import streams
from pmsearch.shared.bus import publish
from pmsearch.shared.messages import DeliveryWithdrawn, IngestItem, IngestReplied, IngestRequested


class StreamIngest:
    def __init__(self, redis: Redis, timeout_seconds: float) -> None:
        self.redis = redis
        self.timeout = timeout_seconds

    async def ingest(self, tenant: str, mailbox: str, folder: str, raws: list[bytes]) -> list[IngestItem]:
        request_id = f"sync-{uuid.uuid4().hex}"
        message = IngestRequested(
            request_id=request_id, tenant_id=tenant, mailbox=mailbox, folder=folder,
            raw=[base64.b64encode(raw).decode() for raw in raws],
        )
        await publish(self.redis, streams.INGEST, message)
        reply = await self.redis.blpop([streams.reply_key(request_id)], timeout=self.timeout)
        if reply is None:
            raise ServerError("ingest", f"{tenant}/{mailbox}: the searcher did not answer an ingest request in time")
        return IngestReplied.model_validate_json(reply[1]).items

    async def withdraw(self, tenant: str, mailbox: str, folder: str, message_ids: list[str]) -> None:
        await publish(self.redis, streams.WITHDRAWN, DeliveryWithdrawn(
            tenant_id=tenant, mailbox=mailbox, folder=folder, message_ids=message_ids))
