"""Gateway errors, each rendered as ``application/problem+json``.

    PmError
    └── GatewayError
        ├── Unauthorized        401  no, unknown, expired or revoked API key; wrong admin token
        ├── Forbidden           403  the key lacks a permission
        ├── BadHeader           400  a header that does not validate (Last-Event-ID)
        ├── InvalidRequest      422  a body or filter that does not validate
        ├── NotFound            404  no such run (of the caller's principal and scope), no such API key
        ├── Conflict            409  the run has already finished (cancelling it)
        ├── IdempotencyKeyInUse 409  a request with the same Idempotency-Key is still starting (Retry-After)
        ├── IdempotencyKeyReused 422 the Idempotency-Key came with another request body
        ├── BodyTooLarge        413  a request body over its limit, refused unread
        ├── CapExhausted        429  the tenant's daily cap is spent (Retry-After)
        ├── RateLimited         429  the key's plain searches for this minute are spent (Retry-After)
        ├── AuthThrottled       429  too many wrong credentials from this address this minute (Retry-After)
        ├── TooManyStreams      429  the key holds all its stream slots (Retry-After)
        ├── Overloaded          503  this replica is at capacity, or Redis is unreachable (Retry-After)
        └── UpstreamTimeout     504  the searcher did not answer in time
"""

from __future__ import annotations

from pmsearch.shared.errors import PmError


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


class BadHeader(GatewayError):
    status = 400
    code = "bad_header"
    title = "Header does not validate"


class InvalidRequest(GatewayError):
    status = 422
    code = "invalid_request"
    title = "Request does not validate"


class NotFound(GatewayError):
    status = 404
    code = "not_found"
    title = "Not found"


class TenantBusy(GatewayError):
    """The caller's tenant holds its share of a capacity on this replica
    (``PM_TENANT_SHARE``): other tenants still get slots."""

    status = 429
    code = "tenant_busy"
    title = "The tenant holds its share of this gateway"

    def __init__(self, detail: str, retry_after: int) -> None:
        super().__init__(detail, retry_after=retry_after)


class StoreFull(GatewayError):
    """Redis refused a write because it holds its ``maxmemory``: nothing was written
    (writes that belong together are one MULTI), and the request may be repeated once
    runs expire or an operator frees memory."""

    status = 503
    code = "store_full"
    title = "The store is full"

    def __init__(self, detail: str, retry_after: int) -> None:
        super().__init__(detail, retry_after=retry_after)


class Conflict(GatewayError):
    status = 409
    code = "conflict"
    title = "Conflicts with the resource's state"


class IdempotencyKeyInUse(GatewayError):
    status = 409
    code = "idempotency_key_in_use"
    title = "A request with this Idempotency-Key is in progress"

    def __init__(self, detail: str, retry_after: int) -> None:
        super().__init__(detail, retry_after=retry_after)


class IdempotencyKeyReused(GatewayError):
    status = 422
    code = "idempotency_key_reused"
    title = "Idempotency-Key sent with another request"


class CapExhausted(GatewayError):
    status = 429
    code = "cap_exhausted"
    title = "Daily cap spent"

    def __init__(self, detail: str, retry_after: int) -> None:
        super().__init__(detail, retry_after=retry_after)
        self.retry_after = retry_after


class BodyTooLarge(GatewayError):
    status = 413
    code = "body_too_large"
    title = "Request body too large"


class RateLimited(GatewayError):
    status = 429
    code = "rate_limited"
    title = "Too many searches"

    def __init__(self, detail: str, retry_after: int) -> None:
        super().__init__(detail, retry_after=retry_after)


class AuthThrottled(GatewayError):
    """Too many wrong credentials from the client's address this minute
    (``pmsearch/services/gateway/auth_throttle.py``); nothing was looked up."""

    status = 429
    code = "auth_throttled"
    title = "Too many wrong credentials"

    def __init__(self, detail: str, retry_after: int) -> None:
        super().__init__(detail, retry_after=retry_after)


class TooManyStreams(GatewayError):
    status = 429
    code = "too_many_streams"
    title = "Too many open streams"

    def __init__(self, detail: str, retry_after: int) -> None:
        super().__init__(detail, retry_after=retry_after)


class UpstreamTimeout(GatewayError):
    status = 504
    code = "upstream_timeout"
    title = "The searcher did not answer in time"


class Overloaded(GatewayError):
    status = 503
    code = "overloaded"
    title = "Service at capacity"

    def __init__(self, detail: str, retry_after: int) -> None:
        super().__init__(detail, retry_after=retry_after)
