"""Gateway logic: who is calling, what they may see, and the direct calls to the searcher.

The caller's scope comes from the API key's record, never from the request body; the
gateway signs it so the searcher can trust it.
"""

from __future__ import annotations

import base64
import secrets
import time
import uuid
from datetime import UTC, datetime

from redis.asyncio import Redis

from services.gateway.auth_throttle import AuthThrottle
from services.gateway.errors import Forbidden, InvalidRequest, NotFound, Unauthorized, UpstreamTimeout
from services.gateway.repository import GatewayRepository
from services.gateway.schemas import (
    ApiKeyRecord,
    IngestBatch,
    IngestResult,
    KeyCreate,
    KeyCreated,
    KeyInfo,
    KeyList,
    Permission,
    SearchRequest,
    SearchResponse,
    TenantSettings,
)
from shared import streams
from shared.bus import publish
from shared.errors import PmError
from shared.messages import (
    IngestReplied,
    IngestRequested,
    LookupReplied,
    LookupRequested,
    SearchReplied,
    SearchRequested,
)
from shared.scope import Scope, sign_scope
from shared.settings import GatewaySettings


class _Problem(PmError):
    """A searcher-side error relayed with the searcher's own status and code."""

    def __init__(self, detail: str, status: int, code: str) -> None:
        super().__init__(detail)
        self.status = status  # type: ignore[misc]
        self.code = code  # type: ignore[misc]
        self.title = code.replace("_", " ").capitalize()  # type: ignore[misc]


class GatewayService:
    def __init__(self, redis: Redis, settings: GatewaySettings) -> None:
        self.redis = redis
        self.settings = settings
        self.repo = GatewayRepository(redis)
        self.throttle = AuthThrottle(settings.auth_failures_per_minute)

    # ------------------------------------------------------------ callers

    async def authenticate(self, key: str | None, address: str | None = None) -> ApiKeyRecord:
        """The active key's record; ``address`` (the client's) is throttled after too
        many wrong keys (:mod:`.auth_throttle`)."""
        if not key:
            raise Unauthorized("send an API key as 'Authorization: Bearer <key>'")
        self.throttle.check(address)
        record = await self.repo.find_key(key)
        status = None if record is None else record.status_at(datetime.now(UTC))
        if record is None or status != "active":
            self.throttle.failed(address)
            raise Unauthorized("API key not recognised" if record is None else f"API key {status}")
        return record

    @staticmethod
    def require(record: ApiKeyRecord, permission: Permission) -> None:
        if permission not in record.permissions:
            raise Forbidden(f"this API key lacks the '{permission}' permission")

    def require_admin(self, token: str | None, address: str | None = None) -> None:
        expected = self.settings.admin_token.get_secret_value().encode()
        if not token:
            raise Unauthorized("admin token missing or wrong")
        self.throttle.check(address)
        # Bytes, not str: compare_digest raises TypeError on non-ASCII str (a 500, not a 401).
        if not secrets.compare_digest(token.encode(), expected):
            self.throttle.failed(address)
            raise Unauthorized("admin token missing or wrong")

    def sign(self, record: ApiKeyRecord, *, run_id: str = "", expires_at: float | None = None) -> str:
        scope = Scope(
            tenant_id=record.tenant_id,
            principal=record.principal,
            mailboxes=tuple(record.mailboxes),
            run_id=run_id,
            expires_at=expires_at or time.time() + self.settings.scope_ttl_seconds,
        )
        return sign_scope(scope, self.settings.scope_key.get_secret_value())

    async def tenant_settings(self, tenant_id: str) -> TenantSettings:
        s = self.settings
        defaults = TenantSettings(
            daily_cap=s.default_daily_cap, max_steps=s.default_max_steps, max_seconds=s.default_max_seconds
        )
        return await self.repo.tenant_settings(tenant_id, defaults)

    # ------------------------------------------------------------ admin

    async def create_key(self, spec: KeyCreate) -> KeyCreated:
        now = datetime.now(UTC)
        if spec.expires_at is not None and spec.expires_at <= now:
            raise InvalidRequest("expires_at: must be in the future")
        key = "pk_" + secrets.token_urlsafe(32)
        record = ApiKeyRecord(
            key_id=uuid.uuid4().hex[:12],
            tenant_id=spec.tenant_id,
            principal=spec.principal,
            permissions=spec.permissions,
            mailboxes=spec.mailboxes,
            created_at=now,
            expires_at=spec.expires_at,
        )
        await self.repo.save_key(key, record)
        return KeyCreated(key=key, record=record)

    async def list_keys(self, tenant_id: str | None) -> KeyList:
        now = datetime.now(UTC)
        records = [r for r in await self.repo.list_keys() if tenant_id is None or r.tenant_id == tenant_id]
        records.sort(key=lambda r: (r.tenant_id, r.created_at))
        return KeyList(keys=[KeyInfo(**r.model_dump(), status=r.status_at(now)) for r in records])

    async def revoke_key(self, key_id: str) -> KeyInfo:
        """Revoke a key for good; revoking a revoked key changes nothing."""
        found = await self.repo.find_key_by_id(key_id)
        if found is None:
            raise NotFound(f"no API key {key_id}")
        digest, record = found
        now = datetime.now(UTC)
        if record.revoked_at is None:
            record = record.model_copy(update={"revoked_at": now})
            await self.repo.update_key(digest, record)
        return KeyInfo(**record.model_dump(), status=record.status_at(now))

    # ------------------------------------------------------------ direct calls

    async def _call(self, stream: str, request_id: str, message, timeout: float) -> bytes:
        # Trimmed by age: past twice its timeout a request has been given up on.
        await publish(self.redis, stream, message, max_age_seconds=2 * timeout)
        popped = await self.redis.blpop([streams.reply_key(request_id)], timeout=timeout)
        if popped is None:
            raise UpstreamTimeout(f"no answer from the searcher within {timeout:g} s")
        return popped[1]

    async def search(self, record: ApiKeyRecord, req: SearchRequest) -> SearchResponse:
        if req.filters.mailboxes:
            outside = sorted(set(req.filters.mailboxes) - set(record.mailboxes))
            if outside:
                raise Forbidden(f"mailbox {', '.join(outside)} is outside this key's scope")
        started = time.perf_counter()
        request_id = uuid.uuid4().hex
        timeout = self.settings.search_timeout_seconds
        message = SearchRequested(
            request_id=request_id,
            tenant_id=record.tenant_id,
            scope_token=self.sign(record),
            deadline=time.time() + timeout,
            query=req.query,
            mode=req.mode,  # type: ignore[arg-type]
            filters=req.filters.model_dump(mode="json", exclude_none=True),
            limit=req.limit,
        )
        reply = SearchReplied.model_validate_json(await self._call(streams.QUERIES, request_id, message, timeout))
        if not reply.ok:
            raise _Problem(reply.error or "search failed", reply.status, reply.error_code or "search_failed")
        return SearchResponse(
            query=req.query, mode=req.mode, hits=reply.hits, took_ms=(time.perf_counter() - started) * 1000
        )

    async def lookup(self, record: ApiKeyRecord, tool: str, arguments: dict) -> LookupReplied:
        """One read-only tool run by the searcher inside the key's signed scope
        (``pm:lookups``), outside any run: nothing is stored as evidence."""
        request_id = uuid.uuid4().hex
        timeout = self.settings.search_timeout_seconds
        message = LookupRequested(
            request_id=request_id, tenant_id=record.tenant_id, scope_token=self.sign(record),
            deadline=time.time() + timeout, tool=tool, arguments=arguments,
        )
        return LookupReplied.model_validate_json(await self._call(streams.LOOKUPS, request_id, message, timeout))

    async def ingest(self, batch: IngestBatch) -> IngestResult:
        for i, raw in enumerate(batch.raw):
            try:
                base64.b64decode(raw, validate=True)
            except ValueError:
                raise InvalidRequest(f"raw[{i}] is not valid base64") from None
        request_id = uuid.uuid4().hex
        message = IngestRequested(
            request_id=request_id,
            tenant_id=batch.tenant_id,
            mailbox=batch.mailbox,
            folder=batch.folder,
            raw=batch.raw,
        )
        timeout = self.settings.ingest_timeout_seconds
        reply = IngestReplied.model_validate_json(await self._call(streams.INGEST, request_id, message, timeout))
        return IngestResult(
            indexed=sum(i.status == "indexed" for i in reply.items),
            duplicate=sum(i.status == "duplicate" for i in reply.items),
            errors=[f"message {i.index}: {i.error}" for i in reply.items if i.status == "error"],
            collisions=sum(i.collision for i in reply.items),
            notes=[f"message {i.index}: {note}" for i in reply.items for note in i.notes],
            index_id=reply.index_id,
        )
