"""The gateway's HTTP request and response bodies."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, get_args

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from shared.filters import Narrowing
from shared.messages import Hit, Strategy

# No "admin" permission: the admin API is cross-tenant (ingest into any tenant, keys for
# anyone), so only the deployment's admin token opens it, never a tenant's API key.
Permission = Literal["search", "search:agentic"]
PERMISSIONS: tuple[str, ...] = get_args(Permission)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchRequest(_Body):
    query: str = Field(min_length=1, max_length=2000)
    mode: Literal["keyword", "semantic", "hybrid", "agentic"] = "hybrid"
    filters: Narrowing = Field(default_factory=Narrowing)
    limit: int = Field(default=10, ge=1, le=100)
    strategy: Strategy = Field(
        default="loop",
        description=(
            "agentic only: `loop` plans, searches and judges until the evidence answers; "
            "`single_shot` answers from the question's own hybrid search in one model call "
            "(the baseline `pmsearch eval --baseline` compares against)."
        ),
    )


class SearchResponse(_Body):
    query: str
    mode: str
    hits: list[Hit]
    took_ms: float


class ApiKeyRecord(_Body):
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


class KeyCreate(_Body):
    tenant_id: str = Field(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9_-]*$")
    principal: str = Field(min_length=1, max_length=200)
    permissions: list[Permission] = Field(default_factory=lambda: ["search", "search:agentic"])
    mailboxes: list[str] = Field(min_length=1)
    expires_at: AwareDatetime | None = Field(
        default=None, description="When the key stops working (RFC 3339 with a time zone); never if absent."
    )


class KeyCreated(_Body):
    key: str
    record: ApiKeyRecord


class KeyInfo(ApiKeyRecord):
    """A key as the admin API lists it: its record and state, never the key itself."""

    status: Literal["active", "expired", "revoked"]


class KeyList(_Body):
    keys: list[KeyInfo]


class TenantSettings(_Body):
    """Per-tenant settings. Names match the dotted names in the docs."""

    daily_cap: int = Field(default=500, ge=0, alias="search.agentic_daily_cap")
    max_steps: int = Field(default=6, ge=1, le=50, alias="search.agentic_max_steps")
    max_seconds: float = Field(default=8.0, gt=0, le=600, alias="search.agentic_max_seconds")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class TenantSettingsPatch(_Body):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    daily_cap: int | None = Field(default=None, ge=0, alias="search.agentic_daily_cap")
    max_steps: int | None = Field(default=None, ge=1, le=50, alias="search.agentic_max_steps")
    max_seconds: float | None = Field(default=None, gt=0, le=600, alias="search.agentic_max_seconds")


class IngestBatch(_Body):
    tenant_id: str = Field(min_length=1, max_length=64)
    mailbox: str = Field(min_length=1, max_length=200)
    folder: str = Field(default="INBOX", max_length=200)
    raw: list[str] = Field(
        max_length=1000,
        description="RFC 822 messages, base64-encoded. An empty list imports nothing and returns the index id.",
    )


class IngestResult(_Body):
    indexed: int
    duplicate: int = Field(description="Copies of mail already indexed; a new mailbox or folder is recorded on it.")
    errors: list[str]
    collisions: int = Field(
        default=0, description="Indexed as messages of their own: the tenant has other content under their Message-ID."
    )
    notes: list[str] = Field(
        default_factory=list, description="`message N: ...`: what an ingest limit cut from an imported message."
    )
    index_id: str | None = Field(
        default=None,
        description="The index the messages went into. It changes only when the index is rebuilt or replaced; "
        "`pmsearch ingest` keys its record of imported files by it.",
    )
