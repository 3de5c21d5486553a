"""The readiness check of a stage that calls a model. It lives with the model client, not
in :mod:`pmsearch.shared.health`, so the verifier, which holds no model credentials, never
imports an HTTP client."""

from __future__ import annotations

import httpx

from pmsearch.shared.health import PROBE_SECONDS, Check
from pmsearch.shared.settings import ModelSettings


def model_check(settings: ModelSettings) -> Check:
    """The model endpoint answers HTTP at all (its model list; any status below 500, so
    a provider that wants other credentials for that list still counts as reachable)."""
    url = settings.model_base_url.rstrip("/") + "/models"
    key = settings.model_api_key.get_secret_value() if settings.model_api_key else None
    headers = {"Authorization": f"Bearer {key}"} if key else {}

    async def check() -> None:
        async with httpx.AsyncClient(timeout=PROBE_SECONDS) as client:
            response = await client.get(url, headers=headers)
        if response.status_code >= 500:
            raise RuntimeError(f"the model endpoint answered {response.status_code}")

    return check
