"""One reading of credentials for every door (pmsearch/services/gateway/auth.py): which
principals each authenticator admits, from which headers, against a real Redis."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from pydantic import SecretStr
from starlette.requests import Request

from pmsearch.services.gateway.auth import Authenticator, Credentials, Principal, admin_token, api_key, key_or_admin
from pmsearch.services.gateway.errors import AuthThrottled, Forbidden, Unauthorized
from pmsearch.services.gateway.repository import GatewayRepository
from pmsearch.services.gateway.schemas import ApiKeyRecord

ADMIN = "admin-" + "x" * 32


async def credentials(redis, failures_per_minute: int = 10) -> tuple[Credentials, str, ApiKeyRecord]:
    repo = GatewayRepository(redis)
    key = "pk_" + uuid.uuid4().hex
    record = ApiKeyRecord(key_id=uuid.uuid4().hex[:12], tenant_id="acme", principal="alice", permissions=["search"],
                          mailboxes=["alice"], created_at=datetime.now(UTC))
    await repo.save_key(key, record)
    return Credentials(repo, SecretStr(ADMIN), failures_per_minute), key, record


def request(creds: Credentials, headers: dict[str, str], address: str = "10.0.0.1") -> Request:
    app = SimpleNamespace(state=SimpleNamespace(gateway=SimpleNamespace(credentials=creds)))
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    return Request({"type": "http", "headers": raw, "client": (address, 1234), "app": app})


async def test_a_key_is_read_from_the_bearer_header_or_x_api_key(redis) -> None:
    creds, key, record = await credentials(redis)
    for headers in ({"Authorization": f"Bearer {key}"}, {"X-API-Key": key}):
        assert await api_key(request(creds, headers)) == Principal(key=record)


async def test_the_admin_token_is_no_api_key(redis) -> None:
    creds, _, _ = await credentials(redis)
    with pytest.raises(Unauthorized, match="not recognised"):
        await api_key(request(creds, {"Authorization": f"Bearer {ADMIN}"}))


async def test_an_admin_route_admits_the_token_only_as_a_bearer_header_and_no_key(redis) -> None:
    creds, key, _ = await credentials(redis)
    assert (await admin_token(request(creds, {"Authorization": f"Bearer {ADMIN}"}))).admin
    for headers in ({"X-API-Key": ADMIN}, {"Authorization": f"Bearer {key}"}, {}):
        with pytest.raises(Unauthorized, match="admin token"):
            await admin_token(request(creds, headers))


async def test_a_door_for_either_admits_the_admin_and_a_key_holder(redis) -> None:
    creds, key, record = await credentials(redis)
    assert (await key_or_admin(request(creds, {"Authorization": f"Bearer {ADMIN}"}))).admin
    assert (await key_or_admin(request(creds, {"Authorization": f"Bearer {key}"}))).record == record


async def test_an_expired_key_is_refused_by_name(redis) -> None:
    creds, _, _ = await credentials(redis)
    key = "pk_" + uuid.uuid4().hex
    expired = ApiKeyRecord(key_id="old", tenant_id="acme", principal="bob", permissions=["search"], mailboxes=["bob"],
                           created_at=datetime.now(UTC) - timedelta(days=2),
                           expires_at=datetime.now(UTC) - timedelta(days=1))
    await creds.repo.save_key(key, expired)
    with pytest.raises(Unauthorized, match="API key expired"):
        await api_key(request(creds, {"Authorization": f"Bearer {key}"}))


async def test_wrong_credentials_of_either_kind_count_toward_one_addresss_throttle(redis) -> None:
    creds, key, _ = await credentials(redis, failures_per_minute=2)
    for authenticator, token in ((api_key, "pk_wrong"), (admin_token, "wrong")):
        with pytest.raises(Unauthorized):
            await authenticator(request(creds, {"Authorization": f"Bearer {token}"}))
    with pytest.raises(AuthThrottled):  # even the right key waits out the minute
        await api_key(request(creds, {"Authorization": f"Bearer {key}"}))
    assert await api_key(request(creds, {"Authorization": f"Bearer {key}"}, address="10.0.0.2"))


def test_a_key_without_a_permission_is_forbidden_and_the_admin_is_not() -> None:
    record = ApiKeyRecord(key_id="k", tenant_id="acme", principal="alice", permissions=["search"],
                          mailboxes=["alice"], created_at=datetime.now(UTC))
    with pytest.raises(Forbidden, match="search:agentic"):
        Principal(key=record).require("search:agentic")
    Principal().require("search:agentic")


def test_an_authenticator_must_admit_someone() -> None:
    with pytest.raises(ValueError):
        Authenticator()
