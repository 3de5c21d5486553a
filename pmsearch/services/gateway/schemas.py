"""The records every area of the gateway reads: API keys and their permissions, tenant settings."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, get_args

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from pmsearch.shared.messages import AnswerStyle

# No "admin" permission: the admin API is cross-tenant (ingest into any tenant, keys for
# anyone), so only the deployment's admin token opens it, never a tenant's API key.
Permission = Literal["search", "search:agentic"]
PERMISSIONS: tuple[str, ...] = get_args(Permission)


class Body(BaseModel):
    """A request or response body: an unknown field is an error, not ignored."""

    model_config = ConfigDict(extra="forbid")


class ApiKeyRecord(Body):
    """What a key grants. Stored under the key's SHA-256; the key itself is never stored."""

    key_id: str
    tenant_id: str
    principal: str
    permissions: list[Permission]
    mailboxes: list[str] = Field(min_length=1)
    created_at: datetime
    expires_at: AwareDatetime | None = None
    revoked_at: AwareDatetime | None = None

    @field_validator("permissions", mode="before")
    @classmethod
    def _drop_retired(cls, value: object) -> object:
        # Records stored before "admin" was retired still load; the grant is gone.
        return [p for p in value if p in PERMISSIONS] if isinstance(value, list) else value

    def status_at(self, now: datetime) -> Literal["active", "expired", "revoked"]:
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"


class TenantSettings(Body):
    """Per-tenant settings. Names match the dotted names in the docs."""

    daily_cap: int = Field(default=500, ge=0, alias="search.agentic_daily_cap")
    max_steps: int = Field(default=6, ge=1, le=50, alias="search.agentic_max_steps")
    max_seconds: float = Field(default=8.0, gt=0, le=600, alias="search.agentic_max_seconds")
    answer_style: AnswerStyle = Field(
        default="write", alias="answer.style",
        description='"write": the model writes the answer; "extract": the model chooses sentences of the mail, '
        'which the answer quotes word for word; "write_or_extract": the model writes, and a sentence the mail '
        "does not bear out gives way to the mail's sentence it was made from.",
    )

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
