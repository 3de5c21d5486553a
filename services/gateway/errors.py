"""Gateway errors, each rendered as ``application/problem+json``.

    PmError
    └── GatewayError
        ├── Unauthorized        401  no or unknown API key
        ├── Forbidden           403  the key lacks a permission
        ├── InvalidRequest      422  a body or filter that does not validate
        ├── NotFound            404  no such run (in the caller's tenant)
        ├── CapExhausted        429  the tenant's daily cap is spent (Retry-After)
        ├── NotAvailable        501  a mode this deployment does not offer
        └── UpstreamTimeout     504  the searcher did not answer in time
"""

from __future__ import annotations

from shared.errors import PmError


class GatewayError(PmError):
    code = "gateway"
    title = "Gateway error"


class Unauthorized(GatewayError):
    status = 401
    code = "unauthorized"
    title = "Missing or unknown API key"


class Forbidden(GatewayError):
    status = 403
    code = "forbidden"
    title = "Permission missing"


class InvalidRequest(GatewayError):
    status = 422
    code = "invalid_request"
    title = "Request does not validate"


class NotFound(GatewayError):
    status = 404
    code = "not_found"
    title = "Not found"


class CapExhausted(GatewayError):
    status = 429
    code = "cap_exhausted"
    title = "Daily cap spent"

    def __init__(self, detail: str, retry_after: int) -> None:
        super().__init__(detail, retry_after=retry_after)
        self.retry_after = retry_after


class UpstreamTimeout(GatewayError):
    status = 504
    code = "upstream_timeout"
    title = "The searcher did not answer in time"


class NotAvailable(GatewayError):
    status = 501
    code = "not_available"
    title = "Not available"
