"""``Admission.hold``: this replica's capacity and the key's own limits, taken in that
order and given back however the block ends (pmsearch/services/gateway/admission.py), against a
real Redis."""

from __future__ import annotations

import asyncio
import secrets
import uuid
from datetime import UTC, datetime

import pytest

from pmsearch.services.gateway.admission import Admission
from pmsearch.services.gateway.auth import Principal
from pmsearch.services.gateway.errors import Overloaded, RateLimited, TooManyStreams
from pmsearch.services.gateway.limits import KeyLimits
from pmsearch.services.gateway.schemas import ApiKeyRecord
from pmsearch.shared.settings import GatewaySettings


def admission(redis, **overrides) -> Admission:
    settings = GatewaySettings(admin_token="a" * 32, scope_key=secrets.token_urlsafe(32), **overrides)
    limits = KeyLimits(redis, search_rate_per_minute=2, max_streams=1, lease_seconds=30)
    return Admission(settings, limits)


def key_holder(tenant: str = "acme") -> Principal:
    record = ApiKeyRecord(key_id=uuid.uuid4().hex, tenant_id=tenant, principal="alice",
                          permissions=["search", "search:agentic"], mailboxes=["alice"], created_at=datetime.now(UTC))
    return Principal(key=record)


async def streams_held(redis, principal: Principal) -> int:
    return await redis.zcard(f"pm:limit:streams:{principal.record.key_id}")


async def test_a_hold_gives_back_the_slot_and_the_keys_stream_when_its_block_fails(redis) -> None:
    adm, who = admission(redis), key_holder()
    with pytest.raises(ValueError):
        async with adm.hold("waiting_runs", who, key_limit="stream"):
            assert adm.capacities["waiting_runs"].held == 1
            assert await streams_held(redis, who) == 1
            raise ValueError("the run could not start")
    assert adm.capacities["waiting_runs"].held == 0
    assert await streams_held(redis, who) == 0


async def test_a_full_replica_refuses_before_the_key_spends_any_of_its_rate(redis) -> None:
    adm, who = admission(redis, max_direct_searches=1), key_holder()
    async with adm.hold("direct_searches", key_holder(), key_limit="rate"):
        with pytest.raises(Overloaded):
            async with adm.hold("direct_searches", who, key_limit="rate"):
                pass
    assert await redis.get(f"pm:limit:rate:{who.record.key_id}") is None


async def test_a_key_past_its_rate_gives_the_replicas_slot_back(redis) -> None:
    adm, who = admission(redis), key_holder()
    for _ in range(2):
        async with adm.hold("direct_searches", who, key_limit="rate"):
            pass
    with pytest.raises(RateLimited):
        async with adm.hold("direct_searches", who, key_limit="rate"):
            pass
    assert adm.capacities["direct_searches"].held == 0


async def test_a_stream_handed_to_a_response_keeps_its_slot_until_the_response_ends(redis) -> None:
    adm, who = admission(redis), key_holder()

    async def events():
        yield {"event": "done", "data": "{}"}

    async with adm.hold("event_streams", who, key_limit="stream") as held:
        response = held.stream(events())
    assert adm.capacities["event_streams"].held == 1
    with pytest.raises(TooManyStreams):  # the key's one stream is still the response's
        async with adm.hold("event_streams", who, key_limit="stream"):
            pass
    await _serve(response)
    assert adm.capacities["event_streams"].held == 0
    assert await streams_held(redis, who) == 0


async def test_the_admin_counts_against_the_tenant_it_acts_on_and_spends_no_key_limit(redis) -> None:
    adm = admission(redis)
    async with adm.hold("direct_searches", Principal(), tenant="acme", key_limit="rate"):
        assert adm.capacities["direct_searches"].held_by == {"acme": 1}
    assert not adm.capacities["direct_searches"].held_by


async def _serve(response) -> None:
    """Run an SSE response to its end on a client that reads it all."""
    sent: list[dict] = []
    asked = 0
    never = asyncio.Event()

    async def receive() -> dict:
        nonlocal asked
        asked += 1
        if asked > 1:
            await never.wait()  # the client stays until the stream ends
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/", "headers": [], "query_string": b"",
             "http_version": "1.1", "scheme": "http", "server": ("test", 80), "client": ("127.0.0.1", 1)}
    await response(scope, receive, send)
    assert any(m["type"] == "http.response.body" for m in sent)
