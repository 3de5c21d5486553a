"""The gateway's own Redis records: API keys (hashed), tenant settings, daily caps."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone

from redis.asyncio import Redis

from services.gateway.schemas import ApiKeyRecord, TenantSettings

# INCR and roll back in one step, so concurrent runs can never overspend the cap.
_TAKE_CAP = """
local used = redis.call('INCR', KEYS[1])
if used == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
if used > tonumber(ARGV[1]) then
  redis.call('DECR', KEYS[1])
  return -1
end
return used
"""


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _key_record(digest: str) -> str:
    return f"pm:apikey:{digest}"


def _tenant(tenant_id: str) -> str:
    return f"pm:tenant:{tenant_id}"


def seconds_to_utc_midnight(now: datetime | None = None) -> int:
    now = now or datetime.now(timezone.utc)
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return max(1, int((midnight - now).total_seconds()) + 1)


class GatewayRepository:
    def __init__(self, redis: Redis) -> None:
        self._redis = redis
        self._take_cap = redis.register_script(_TAKE_CAP)

    async def save_key(self, key: str, record: ApiKeyRecord) -> None:
        await self._redis.set(_key_record(key_digest(key)), record.model_dump_json())

    async def find_key(self, key: str) -> ApiKeyRecord | None:
        raw = await self._redis.get(_key_record(key_digest(key)))
        return ApiKeyRecord.model_validate_json(raw) if raw else None

    async def tenant_settings(self, tenant_id: str, defaults: TenantSettings) -> TenantSettings:
        raw = await self._redis.get(_tenant(tenant_id))
        if not raw:
            return defaults
        merged = defaults.model_dump() | TenantSettings.model_validate_json(raw).model_dump(exclude_unset=True)
        return TenantSettings.model_validate(merged)

    async def save_tenant_settings(self, tenant_id: str, settings: TenantSettings) -> None:
        await self._redis.set(_tenant(tenant_id), settings.model_dump_json(by_alias=True))

    async def take_cap(self, tenant_id: str, cap: int) -> int | None:
        """Take one unit of today's cap; the units used, or None when it is spent."""
        day = datetime.now(timezone.utc).strftime("%Y%m%d")
        used = await self._take_cap(keys=[f"pm:cap:{tenant_id}:{day}"], args=[cap, 2 * 86400])
        return None if int(used) < 0 else int(used)

    async def cap_used(self, tenant_id: str) -> int:
        day = datetime.now(timezone.utc).strftime("%Y%m%d")
        return int(await self._redis.get(f"pm:cap:{tenant_id}:{day}") or 0)
