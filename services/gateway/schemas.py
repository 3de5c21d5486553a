"""The gateway's HTTP request and response bodies."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.filters import Narrowing
from shared.messages import Hit, Strategy

Permission = Literal["search", "search:agentic", "admin"]


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


class KeyCreate(_Body):
    tenant_id: str = Field(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9_-]*$")
    principal: str = Field(min_length=1, max_length=200)
    permissions: list[Permission] = Field(default_factory=lambda: ["search", "search:agentic"])
    mailboxes: list[str] = Field(min_length=1)


class KeyCreated(_Body):
    key: str
    record: ApiKeyRecord


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
    raw: list[str] = Field(min_length=1, max_length=1000, description="RFC 822 messages, base64-encoded.")


class IngestResult(_Body):
    indexed: int
    duplicate: int
    errors: list[str]
