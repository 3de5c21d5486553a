"""The gateway's tenant settings against a real redis-server: what an administrator set,
and the deployment's defaults for everything else."""

from __future__ import annotations

import uuid

from pmsearch.services.gateway.repository import GatewayRepository
from pmsearch.services.gateway.schemas import TenantSettings


async def test_a_setting_an_administrator_never_set_follows_the_deployments_default(redis):
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    before = GatewayRepository(redis, TenantSettings(answer_style="extract"))
    await before.save_tenant_overrides(tenant, {"max_steps": 2})
    after = GatewayRepository(redis, TenantSettings(answer_style="write", max_steps=6))
    settings = await after.tenant_settings(tenant)
    assert (settings.max_steps, settings.answer_style) == (2, "write")
    assert await after.tenant_overrides(tenant) == {"max_steps": 2}
