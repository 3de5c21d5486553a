"""The root of every pmsearch exception.

Each service roots its own hierarchy in :class:`PmError`. An error carries the HTTP
status and a stable ``code`` so the gateway can render it as ``application/problem+json``
(RFC 9457) without knowing which service raised it, and a worker can put the same code
on a dead-letter entry.

    PmError
    ├── ScopeError             missing, altered or expired scope token
    ├── ContractError          a stream message that does not match its contract
    └── (per service)          pmsearch/services/<stage>/errors.py
"""

from __future__ import annotations

from typing import Any, ClassVar


class PmError(Exception):
    """Base error: a message meant for the caller, plus a status and a stable code."""

    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"
    title: ClassVar[str] = "Internal error"

    def __init__(self, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra

    def problem(self, instance: str | None = None) -> dict[str, Any]:
        """The RFC 9457 body for this error."""
        body: dict[str, Any] = {
            "type": f"https://pmsearch.dev/problems/{self.code}",
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
            "code": self.code,
        }
        if instance:
            body["instance"] = instance
        body.update(self.extra)
        return body


class ScopeError(PmError):
    status = 403
    code = "scope_invalid"
    title = "Scope token refused"


class ContractError(PmError):
    status = 422
    code = "contract"
    title = "Message does not match its contract"
