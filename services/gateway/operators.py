"""Who may read the gateway's operator surfaces on its public port: the metrics, the
readiness checks' details and the AsyncAPI document name every route's traffic,
tenants' cap use, hosts and the streams between the stages, so they are for operators.

With an operator port (``PM_METRICS_PORT``) the public port serves none of them (they
are served there, see ``services/gateway/app.py``); without one, a client on this host
that came through no proxy (no ``Forwarded`` or ``X-Forwarded-For``), or the admin
token."""

from __future__ import annotations

from fastapi import Request

from services.gateway.errors import Unauthorized
from services.gateway.service import GatewayService

_LOOPBACK = frozenset({"127.0.0.1", "::1"})


def bearer(authorization: str | None, x_api_key: str | None = None) -> str | None:
    """The token of an ``Authorization: Bearer`` header, else the ``X-API-Key`` one."""
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return x_api_key


def client_address(request: Request) -> str | None:
    """The peer's address (behind a proxy, the proxy's)."""
    return request.client.host if request.client else None


def operator_request(request: Request, svc: GatewayService) -> bool:
    if svc.settings.metrics_port:
        return False
    try:
        svc.require_admin(bearer(request.headers.get("authorization")), client_address(request))
        return True
    except Unauthorized:
        pass
    host = client_address(request) or ""
    proxied = "forwarded" in request.headers or "x-forwarded-for" in request.headers
    return host in _LOOPBACK and not proxied
