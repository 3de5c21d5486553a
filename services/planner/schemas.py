"""What the planner's model may say. Every reply is re-validated by code; tool arguments
are validated again, strictly, by the searcher against each tool's own schema."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.messages import Hit, RunRequested, Trace, Usage

ToolName = Literal["search", "read_thread", "read_message", "read_attachment_text", "find_related", "contacts"]


class PlannedCall(BaseModel):
    """One read-only tool call."""

    model_config = ConfigDict(extra="forbid")

    tool: ToolName
    arguments: dict[str, Any] = Field(default_factory=dict)


class PlannerAction(BaseModel):
    """The next step: call tools (several run in parallel), answer from the evidence
    found so far, or give up because the mail does not answer the question."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["search", "answer", "give_up"]
    calls: list[PlannedCall] = Field(default_factory=list, max_length=4)
    reason: str = Field(default="", max_length=400)


class FinalAction(BaseModel):
    """The last step: no searches left, so answer from the evidence found or give up."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["answer", "give_up"]
    reason: str = Field(default="", max_length=400)

    @property
    def calls(self) -> list[PlannedCall]:
        return []


Decision = Literal["pending", "search", "judging", "answer", "give_up", "degraded", "done"]


class RunState(BaseModel):
    """The planner's working state for one run, kept in Redis between messages."""

    model_config = ConfigDict(extra="forbid")

    run: RunRequested
    steps_used: int = 0
    next_step: int = 1
    awaiting: list[int] = Field(default_factory=list)
    decision: Decision = "pending"
    notes: list[str] = Field(default_factory=list)  # observations as the model reads them
    focus: list[str] = Field(default_factory=list)  # evidence ids in the order found
    hits: list[Hit] = Field(default_factory=list)  # the question's own hybrid search
    trace: Trace = Field(default_factory=Trace)
    usage: Usage = Field(default_factory=Usage)
    reason: str | None = None
