"""What the run inspector's data route returns."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pmsearch.shared.messages import RunResult


class SourceContext(BaseModel):
    """One citation's excerpt in its place: ``before`` + ``text`` + ``after`` is a span
    of the cited part as stored. ``kept`` is False once the evidence has expired (or the
    stored part no longer holds the excerpt there); then only ``text`` is known."""

    model_config = ConfigDict(extra="forbid")

    sentence: int
    citation: int
    message_id: str
    part: str
    text: str
    before: str = ""
    after: str = ""
    clipped_start: bool = False
    clipped_end: bool = False
    kept: bool = False


class RunView(BaseModel):
    """The inspector's data for one run."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    question: str
    tenant_id: str
    principal: str
    view: Literal["owner", "admin"]
    status: Literal["running", "finished"]
    created_at: float
    deadline: float
    max_steps: int
    max_seconds: float
    result: RunResult | None = None
    sources: list[SourceContext] = Field(default_factory=list)
