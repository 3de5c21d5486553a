"""What the run routes return besides a run's result."""

from __future__ import annotations

from typing import Literal

from pmsearch.services.gateway.schemas import Body


class CancelAccepted(Body):
    run_id: str
    status: Literal["cancelling"] = "cancelling"
