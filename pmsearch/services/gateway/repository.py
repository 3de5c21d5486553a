"""The gateway's own Redis records: API keys (hashed, with an index by key id), tenant
settings, daily caps."""

from __future__ import annotations

import hashlib
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError

from pmsearch.services.gateway.schemas import ApiKeyRecord, TenantSettings

log = logging.getLogger("pmsearch.gateway")


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


# key_id -> digest of every key, so keys can be listed and revoked without the key itself.
KEY_INDEX = "pm:apikeys"


def _key_record(digest: str) -> str:
    return f"pm:apikey:{digest}"


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _tenant(tenant_id: str) -> str:
    return f"pm:tenant:{tenant_id}"


def seconds_to_utc_midnight(now: datetime | None = None) -> int:
    now = now or datetime.now(UTC)
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return max(1, int((midnight - now).total_seconds()) + 1)


class GatewayRepository:
    def __init__(self, redis: Redis, tenant_defaults: TenantSettings | None = None) -> None:
        self._redis = redis
        self._defaults = tenant_defaults or TenantSettings()
        self._indexed: set[str] = set()  # key ids this process saw in the index

    async def save_key(self, key: str, record: ApiKeyRecord) -> None:
        digest = key_digest(key)
        await self._redis.set(_key_record(digest), record.model_dump_json())
        await self._redis.hset(KEY_INDEX, record.key_id, digest)

    async def find_key(self, key: str) -> ApiKeyRecord | None:
        digest = key_digest(key)
        raw = await self._redis.get(_key_record(digest))
        if not raw:
            return None
        record = ApiKeyRecord.model_validate_json(raw)
        # Keys made before the index existed join it the first time they are used; once
        # per process is enough (this was one Redis command on every request).
        if record.key_id not in self._indexed:
            await self._redis.hsetnx(KEY_INDEX, record.key_id, digest)
            self._indexed.add(record.key_id)
        return record

    async def list_keys(self) -> list[ApiKeyRecord]:
        digests = list((await self._redis.hgetall(KEY_INDEX)).values())
        if not digests:
            return []
        # One GET per key in a pipeline, not MGET: in a Redis Cluster the records lie on
        # different slots, and MGET refuses keys that do.
        async with self._redis.pipeline(transaction=False) as pipe:
            for digest in digests:
                pipe.get(_key_record(_text(digest)))
            raws = await pipe.execute()
        return [ApiKeyRecord.model_validate_json(r) for r in raws if r]

    async def find_key_by_id(self, key_id: str) -> tuple[str, ApiKeyRecord] | None:
        digest = await self._redis.hget(KEY_INDEX, key_id)
        raw = await self._redis.get(_key_record(_text(digest))) if digest else None
        return (_text(digest), ApiKeyRecord.model_validate_json(raw)) if raw else None

    async def update_key(self, digest: str, record: ApiKeyRecord) -> None:
        await self._redis.set(_key_record(digest), record.model_dump_json(), xx=True)

    async def tenant_settings(self, tenant_id: str) -> TenantSettings:
        """The tenant's settings: what an administrator set, the deployment's defaults for the rest."""
        return TenantSettings.model_validate(self._defaults.model_dump() | await self.tenant_overrides(tenant_id))

    async def tenant_overrides(self, tenant_id: str) -> dict[str, Any]:
        """What an administrator set for the tenant, by field name; nothing else."""
        raw = await self._redis.get(_tenant(tenant_id))
        return TenantSettings.model_validate_json(raw).model_dump(exclude_unset=True) if raw else {}

    async def save_tenant_overrides(self, tenant_id: str, overrides: dict[str, Any]) -> TenantSettings:
        """Record ``overrides`` as what an administrator set, and only that: a setting
        left unset follows the deployment's default, also after that default changes.
        Returns the settings the tenant now has (refused, as any body, when invalid)."""
        merged = TenantSettings.model_validate(self._defaults.model_dump() | overrides)
        await self._redis.set(
            _tenant(tenant_id), TenantSettings.model_validate(overrides).model_dump_json(by_alias=True, exclude_unset=True)
        )
        return merged

    async def take_cap(self, tenant_id: str, cap: int) -> int | None:
        """Take one unit of today's cap; the units used, or None when it is spent.

        Each INCR is atomic, so concurrent runs can never overspend: a run that counts
        past the cap gives its unit back. No script: the gateway's Redis user may not
        run any (see deploy/redis/users.acl.in)."""
        key = f"pm:cap:{tenant_id}:{datetime.now(UTC).strftime('%Y%m%d')}"
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.incr(key)
            pipe.expire(key, 2 * 86400, nx=True)
            used, _ = await pipe.execute()
        if int(used) > cap:
            await self._redis.decr(key)
            return None
        return int(used)

    async def give_back_cap(self, tenant_id: str) -> None:
        """Return a unit :meth:`take_cap` took for a run that was not started. Best
        effort: Redis may refuse the write for the reason the run was not started."""
        key = f"pm:cap:{tenant_id}:{datetime.now(UTC).strftime('%Y%m%d')}"
        try:
            await self._redis.decr(key)
        except RedisError as exc:
            log.warning("tenant %s: a unit of today's cap could not be given back: %s", tenant_id, exc)

    async def cap_used(self, tenant_id: str) -> int:
        day = datetime.now(UTC).strftime("%Y%m%d")
        return int(await self._redis.get(f"pm:cap:{tenant_id}:{day}") or 0)
