"""Who is calling, read the same way at every door: the API routes, the run inspector,
MCP and the operator surfaces.

An API key travels as ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``; the admin
token only as ``Authorization: Bearer``. A client address that sends too many wrong
credentials is throttled before its next one is looked up (:mod:`.auth_throttle`). A
route says whom it admits with an :class:`Authenticator` dependency, which returns the
:class:`Principal` the request acts as; MCP, mounted beside FastAPI's routing, calls the
same object with its request.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated

from fastapi import Depends
from pydantic import SecretStr
from starlette.requests import HTTPConnection

from pmsearch.services.gateway.auth_throttle import AuthThrottle
from pmsearch.services.gateway.errors import Forbidden, Unauthorized
from pmsearch.services.gateway.repository import GatewayRepository
from pmsearch.services.gateway.schemas import ApiKeyRecord, Permission
from pmsearch.shared.logging_setup import bind

ADMIN_REFUSED = "admin token missing or wrong"


@dataclass(frozen=True)
class Principal:
    """Whom a request acts as: an API key's holder, or the admin (``key`` is None)."""

    key: ApiKeyRecord | None = None

    @property
    def admin(self) -> bool:
        return self.key is None

    @property
    def record(self) -> ApiKeyRecord:
        """The key's record, on a route that admits keys alone."""
        if self.key is None:
            raise RuntimeError("the admin token has no key record")  # a route wired wrongly: a bug
        return self.key

    def require(self, permission: Permission) -> None:
        """:class:`Forbidden` unless the key carries ``permission`` (the admin may do anything)."""
        if self.key is not None and permission not in self.key.permissions:
            raise Forbidden(f"this API key lacks the '{permission}' permission")


def bearer(authorization: str | None, x_api_key: str | None = None) -> str | None:
    """The token of an ``Authorization: Bearer`` header, else the ``X-API-Key`` one."""
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return x_api_key


def client_address(connection: HTTPConnection) -> str | None:
    """The peer's address (behind a proxy, the proxy's)."""
    return connection.client.host if connection.client else None


def same_secret(token: str | None, secret: SecretStr | None) -> bool:
    """Whether ``token`` is ``secret``, in constant time."""
    if not token or secret is None:
        return False
    # Bytes, not str: compare_digest raises TypeError on non-ASCII str (a 500, not a 401).
    return secrets.compare_digest(token.encode(), secret.get_secret_value().encode())


class Credentials:
    """The checks behind every door: an API key against the store, the admin token against
    the settings, each wrong one counted against its address."""

    def __init__(self, repo: GatewayRepository, admin_token: SecretStr | None, failures_per_minute: int) -> None:
        self.repo = repo
        self.admin_token = admin_token
        self.throttle = AuthThrottle(failures_per_minute)

    async def api_key(self, key: str | None, address: str | None = None) -> ApiKeyRecord:
        """The active key's record, else :class:`Unauthorized`."""
        if not key:
            raise Unauthorized("send an API key as 'Authorization: Bearer <key>'")
        self.throttle.check(address)
        record = await self.repo.find_key(key)
        status = None if record is None else record.status_at(datetime.now(UTC))
        if record is None or status != "active":
            self.throttle.failed(address)
            raise Unauthorized("API key not recognised" if record is None else f"API key {status}")
        return record

    def admin(self, token: str | None, address: str | None = None) -> None:
        """Nothing for the admin token, else :class:`Unauthorized`."""
        if not token:
            raise Unauthorized(ADMIN_REFUSED)
        self.throttle.check(address)
        if not same_secret(token, self.admin_token):
            self.throttle.failed(address)
            raise Unauthorized(ADMIN_REFUSED)


class Authenticator:
    """A dependency that returns the request's :class:`Principal`, admitting API keys
    (``keys``), the admin token (``admin``) or either; anyone else gets 401."""

    def __init__(self, *, keys: bool = False, admin: bool = False) -> None:
        if not (keys or admin):
            raise ValueError("an authenticator admits keys, the admin token, or both")
        self.keys = keys
        self.admin = admin

    async def __call__(self, connection: HTTPConnection) -> Principal:
        credentials: Credentials = connection.app.state.gateway.credentials
        headers = connection.headers
        address = client_address(connection)
        if not self.keys:
            credentials.admin(bearer(headers.get("authorization")), address)
            return Principal()
        token = bearer(headers.get("authorization"), headers.get("x-api-key"))
        # The admin token is tried first, uncounted: a wrong one is then counted once, as a key.
        if self.admin and same_secret(token, credentials.admin_token):
            return Principal()
        record = await credentials.api_key(token, address)
        bind(tenant=record.tenant_id)
        return Principal(key=record)


api_key = Authenticator(keys=True)
admin_token = Authenticator(admin=True)
key_or_admin = Authenticator(keys=True, admin=True)

KeyHolder = Annotated[Principal, Depends(api_key)]
Admin = Annotated[Principal, Depends(admin_token)]
Viewer = Annotated[Principal, Depends(key_or_admin)]
