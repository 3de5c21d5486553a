"""What the planner's model may say, built afresh for every call.

The reply schema is made from what the run has seen: passage refs, thread and message
ids are enums of this run's evidence and mailboxes an enum of its scope, so a
grammar-constrained model cannot name anything else; the reply is still re-validated by
code, and the searcher validates every call again against the tool's strict schema.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from pmsearch.shared.messages import CarriedAnswer, CarriedChoice, DraftSentence, Hit, RunRequested, Trace, Usage
from pmsearch.shared.prompts import SEARCH_TOOLS
from pmsearch.shared.tools import constrained_args


def call_models(*, message_ids: list[str], thread_ids: list[str]) -> list[type[BaseModel]]:
    """One reply model per tool the planner may call now, each with its arguments
    constrained to this run."""
    return list(_call_models(tuple(message_ids), tuple(thread_ids)))


# A run's later rounds (and its redeliveries) ask for the same ids again; building the
# models costs milliseconds of CPU, looking them up nothing.
@lru_cache(maxsize=256)
def _call_models(message_ids: tuple[str, ...], thread_ids: tuple[str, ...]) -> tuple[type[BaseModel], ...]:
    models: list[type[BaseModel]] = []
    for name, offered in SEARCH_TOOLS.items():
        # No mailboxes argument is offered (SEARCH_TOOLS), so none is constrained.
        full = constrained_args(name, message_ids=message_ids, thread_ids=thread_ids, mailboxes=[])
        if full is None:
            continue
        args = create_model(
            full.__name__,
            __config__=ConfigDict(extra="forbid"),
            **{k: (f.annotation, f) for k, f in full.model_fields.items() if k in offered},  # type: ignore[call-overload]
        )
        models.append(
            create_model(
                f"{args.__name__}Call",
                __config__=ConfigDict(extra="forbid"),
                tool=(Literal[name], ...),  # type: ignore[valid-type]
                arguments=(args, ...),
            )
        )
    return tuple(models)


def search_model(calls: list[type[BaseModel]]) -> type[BaseModel]:
    """The reply of a search round: up to three calls; none says no search can help."""
    return _search_model(tuple(calls))


@lru_cache(maxsize=256)
def _search_model(calls: tuple[type[BaseModel], ...]) -> type[BaseModel]:
    Call = calls[0] if len(calls) == 1 else Union[calls]  # type: ignore[valid-type]  # noqa: UP007 (built at run time)
    return create_model(
        "PlannerSearch",
        __config__=ConfigDict(extra="forbid"),
        searches=(list[Call], Field(default_factory=list, max_length=3)),  # type: ignore[valid-type]
    )


# ``judging``: an answer attempt's model call is due or under way; ``planning``: the
# search round's. Both are re-entered by whoever advances the run next (a redelivered
# message after a crash), with a new ``turn``.
Decision = Literal["pending", "search", "judging", "planning", "answer", "give_up", "degraded", "done"]


class RunState(BaseModel):
    """The planner's working state for one run, kept in Redis between messages."""

    model_config = ConfigDict(extra="forbid")

    run: RunRequested
    steps_used: int = 0
    next_step: int = 1
    awaiting: list[int] = Field(default_factory=list)
    decision: Decision = "pending"
    notes: list[str] = Field(default_factory=list)  # what was searched and what came of it
    focus: list[str] = Field(default_factory=list)  # evidence ids, most relevant first
    found_later: list[str] = Field(default_factory=list)  # first found by a search round, newest first
    hits: list[Hit] = Field(default_factory=list)  # the question's own hybrid search
    carried: CarriedAnswer | None = None  # the answer the model wrote, handed to the answerer
    chosen: CarriedChoice | None = None  # the sentences the model chose (extract style)
    proposed: list[DraftSentence] = Field(default_factory=list)  # as states saved before ``carried`` hold it
    refunded: bool = False  # one step given back for a search that only filters emptied
    trace: Trace = Field(default_factory=Trace)
    usage: Usage = Field(default_factory=Usage)
    reason: str | None = None
    handed_off_at: float | None = None  # see RunSnapshot.handed_off_at
    # Each entry into a model call takes the next turn; a reply is applied only while
    # its turn is still the run's (a redelivery may have taken the call over).
    turn: int = 0
    sent: list[str] = Field(default_factory=list)  # publishes done that a redelivery must not repeat
