"""Who may read the gateway's operator surfaces on its public port: the metrics, the
readiness checks' details and the AsyncAPI document name every route's traffic,
tenants' cap use, hosts and the streams between the stages, so they are for operators.

With an operator port (``PM_METRICS_PORT``) the public port serves none of them (they
are served there, see :mod:`pmsearch.services.gateway.app`); without one, a client on this host
that came through no proxy (no ``Forwarded`` or ``X-Forwarded-For``), or the admin
token."""

from __future__ import annotations

from fastapi import Request

from pmsearch.services.gateway.auth import admin_token, client_address
from pmsearch.services.gateway.errors import Unauthorized

_LOOPBACK = frozenset({"127.0.0.1", "::1"})


async def operator_request(request: Request) -> bool:
    if request.app.state.gateway.settings.metrics_port:
        return False
    try:
        await admin_token(request)
        return True
    except Unauthorized:
        pass
    host = client_address(request) or ""
    proxied = "forwarded" in request.headers or "x-forwarded-for" in request.headers
    return host in _LOOPBACK and not proxied
