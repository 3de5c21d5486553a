"""The gateway's side of its direct calls to the searcher: a scope signed for the key,
a request on the searcher's stream, and its reply on a list the gateway blocks on.

The caller's scope comes from the API key's record, never from the request body; the
gateway signs it so the searcher can trust it.
"""

from __future__ import annotations

import time

from pydantic import BaseModel
from redis.asyncio import Redis

from pmsearch.services.gateway.errors import UpstreamTimeout
from pmsearch.services.gateway.schemas import ApiKeyRecord
from pmsearch.shared import streams
from pmsearch.shared.bus import publish
from pmsearch.shared.scope import Scope, sign_scope
from pmsearch.shared.settings import GatewaySettings


class Searcher:
    def __init__(self, redis: Redis, settings: GatewaySettings) -> None:
        self.redis = redis
        self.settings = settings

    def sign(self, record: ApiKeyRecord, *, run_id: str = "", expires_at: float | None = None) -> str:
        """``record``'s scope (its tenant, principal and mailboxes), signed."""
        scope = Scope(
            tenant_id=record.tenant_id,
            principal=record.principal,
            mailboxes=tuple(record.mailboxes),
            run_id=run_id,
            expires_at=expires_at or time.time() + self.settings.scope_ttl_seconds,
        )
        return sign_scope(scope, self.settings.scope_key.get_secret_value())

    async def call(self, stream: str, request_id: str, message: BaseModel, timeout: float) -> bytes:
        """The searcher's raw reply to ``message``, or :class:`UpstreamTimeout`."""
        # Never trimmed by age here: the searcher's worker drops a request read past its
        # deadline (an undelivered entry trimmed away would stay in the group's lag for good).
        await publish(self.redis, stream, message)
        popped = await self.redis.blpop([streams.reply_key(request_id)], timeout=timeout)
        if popped is None:
            raise UpstreamTimeout(f"no answer from the searcher within {timeout:g} s")
        return popped[1]
