"""Signed scope tokens.

The gateway resolves the caller's scope from its own records (never from a request
body or a model) and signs it; the searcher refuses any token that is missing, altered
or expired. A token is ``base64url(json) "." base64url(hmac_sha256)``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pmsearch.shared.errors import ScopeError


class Scope(BaseModel):
    """Who may see what: a tenant and the mailboxes inside it. Quarantined mail is
    never in scope; there is no field that could say otherwise."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tenant_id: str = Field(min_length=1)
    principal: str = Field(min_length=1)
    mailboxes: tuple[str, ...] = Field(min_length=1)
    run_id: str = ""
    expires_at: float


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: str, body: str) -> str:
    return _b64(hmac.new(key.encode(), body.encode(), hashlib.sha256).digest())


def sign_scope(scope: Scope, key: str) -> str:
    body = _b64(json.dumps(scope.model_dump(mode="json"), sort_keys=True).encode())
    return f"{body}.{_mac(key, body)}"


def verify_scope(token: str | None, key: str, *, now: float | None = None) -> Scope:
    """The scope a token carries, or :class:`ScopeError` if it cannot be trusted."""
    if not token:
        raise ScopeError("scope token missing")
    body, sep, mac = token.partition(".")
    # A real token is ASCII; compare bytes, since compare_digest raises TypeError on a
    # non-ASCII str (a crash and redeliveries instead of a refusal).
    if not sep or not token.isascii() or not hmac.compare_digest(mac.encode(), _mac(key, body).encode()):
        raise ScopeError("scope token signature does not match")
    try:
        scope = Scope.model_validate_json(_unb64(body))
    except (ValidationError, ValueError) as exc:
        raise ScopeError("scope token is malformed") from exc
    if scope.expires_at < (time.time() if now is None else now):
        raise ScopeError("scope token expired")
    return scope

