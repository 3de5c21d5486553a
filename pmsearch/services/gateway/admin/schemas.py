"""What the admin API sends and returns: keys, tenant settings, imports, runs and cap use."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import AwareDatetime, ConfigDict, Field

from pmsearch.services.gateway.schemas import ApiKeyRecord, Body, Permission
from pmsearch.shared.messages import AnswerStyle, Outcome, RunResult

RunStatus = Literal["running", "finished"]


class KeyCreate(Body):
    tenant_id: str = Field(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9_-]*$")
    principal: str = Field(min_length=1, max_length=200)
    permissions: list[Permission] = Field(default_factory=lambda: ["search", "search:agentic"])
    mailboxes: list[str] = Field(min_length=1)
    expires_at: AwareDatetime | None = Field(
        default=None, description="When the key stops working (RFC 3339 with a time zone); never if absent."
    )


class KeyCreated(Body):
    key: str
    record: ApiKeyRecord


class KeyInfo(ApiKeyRecord):
    """A key as the admin API lists it: its record and state, never the key itself."""

    status: Literal["active", "expired", "revoked"]


class KeyList(Body):
    keys: list[KeyInfo]


class TenantSettingsPatch(Body):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    daily_cap: int | None = Field(default=None, ge=0, alias="search.agentic_daily_cap")
    max_steps: int | None = Field(default=None, ge=1, le=50, alias="search.agentic_max_steps")
    max_seconds: float | None = Field(default=None, gt=0, le=600, alias="search.agentic_max_seconds")
    answer_style: AnswerStyle | None = Field(default=None, alias="answer.style")


class IngestBatch(Body):
    tenant_id: str = Field(min_length=1, max_length=64)
    mailbox: str = Field(min_length=1, max_length=200)
    folder: str = Field(default="INBOX", max_length=200)
    raw: list[str] = Field(
        max_length=1000,
        description="RFC 822 messages, base64-encoded. An empty list imports nothing and returns the index id.",
    )


class IngestResult(Body):
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


class RunSummary(Body):
    """One run as the admin list shows it (times are Unix seconds)."""

    run_id: str
    tenant_id: str
    principal: str
    key_id: str
    question: str
    status: RunStatus
    outcome: Outcome | None = None
    reason: str | None = None
    created_at: float
    deadline: float
    finished_at: float | None = None
    cancelled_at: float | None = None
    steps: int | None = None
    model_calls: int | None = None


class RunPage(Body):
    runs: list[RunSummary]
    next_cursor: str | None = Field(
        description="Pass as `cursor` for the next page; null once the index is exhausted. A page may hold "
        "fewer than `limit` runs (even none) when a filter matched few of the entries one request reads."
    )


class RunView(Body):
    """One run for the admin: its summary and, once finished, its stored result."""

    run: RunSummary
    result: RunResult | None = None


class TenantUsage(Body):
    tenant_id: str
    day: str = Field(description="The UTC day the cap counts (YYYY-MM-DD).")
    runs_used: int
    daily_cap: int
    remaining: int
    resets_in_seconds: int
    budgets: dict[str, float | int | str] = Field(description="The tenant's settings, by their dotted names.")


class RunQuery(Body):
    tenant_id: str | None = None
    principal: str | None = None
    outcome: Outcome | Literal["running"] | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = Field(default=50, ge=1, le=200)
    cursor: str | None = None
