"""What a search request sends and a direct search returns."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pmsearch.services.gateway.schemas import Body
from pmsearch.shared.filters import Narrowing
from pmsearch.shared.messages import Hit, Strategy


class SearchRequest(Body):
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


class SearchResponse(Body):
    query: str
    mode: str
    hits: list[Hit]
    took_ms: float
