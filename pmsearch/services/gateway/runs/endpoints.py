"""A run's routes for its owner: its result, its events, cancelling it."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header
from fastapi.responses import JSONResponse

from pmsearch.services.gateway.auth import KeyHolder
from pmsearch.services.gateway.openapi import EventStream, RunEvent, RunStatus, problems
from pmsearch.services.gateway.runs.schemas import CancelAccepted
from pmsearch.services.gateway.runs.service import parse_last_event_id
from pmsearch.services.gateway.state import Objects
from pmsearch.shared.messages import RunResult

router = APIRouter(tags=["search"])


@router.get(
    "/v1/runs/{run_id}", response_model=RunResult,
    responses={202: {"model": RunStatus, "description": "The run has not finished yet."}, **problems(404, 503)},
)
async def get_run(run_id: str, principal: KeyHolder, gw: Objects):
    """A run's result when finished (200), else its status (202). Only the key's
    principal, with ``search:agentic`` and the run's scope, sees the run (else 404)."""
    meta = await gw.runs.meta(principal.record, run_id)
    result = await gw.runs.result(run_id)
    if result is None:
        return JSONResponse({"run_id": run_id, "status": "running", "deadline": meta.deadline}, status_code=202)
    return JSONResponse(result.model_dump(mode="json"))


@router.get(
    "/v1/runs/{run_id}/events", response_model=RunEvent, response_class=EventStream,
    responses=problems(400, 404, 429, 503),
)
async def run_events(
    run_id: str, principal: KeyHolder, gw: Objects, last_event_id: Annotated[str | None, Header()] = None,
):
    """The run's events as SSE, from the start or after ``Last-Event-ID``; a finished
    run replays from its stored result. Only the key's principal, in the run's scope,
    sees the run (else 404)."""
    after = parse_last_event_id(last_event_id)  # refused before the 200 starts
    meta = await gw.runs.meta(principal.record, run_id)
    async with gw.admission.hold("event_streams", principal, key_limit="stream") as held:
        return held.stream(gw.runs.events(meta, after))


@router.delete(
    "/v1/runs/{run_id}",
    response_model=RunResult,
    responses={
        202: {"model": CancelAccepted, "description": "Cancelling; the result follows shortly"},
        **problems(404, 409, 429, 503),
    },
)
async def cancel_run(run_id: str, principal: KeyHolder, gw: Objects):
    """Cancel a running run: it ends once, through the verifier, with outcome and reason
    ``cancelled`` (200 with the result; 202 if it is not stored within seconds). Only
    the run's owner may cancel it (else 404, as for reading it); a finished run is 409.
    A cancellation counts against the key's search rate (429) and waits in one of the
    replica's waiting slots (503 when none is free)."""
    # It writes, publishes and waits for the verifier: as costly as a search.
    async with gw.admission.hold("waiting_runs", principal, key_limit="rate"):
        return cancelled(run_id, await gw.runs.cancel(principal.record, run_id))


def cancelled(run_id: str, result: RunResult | None) -> JSONResponse:
    """The cancelled run's result, or 202 while the verifier has yet to store it."""
    if result is None:
        return JSONResponse(CancelAccepted(run_id=run_id).model_dump(), status_code=202)
    return JSONResponse(result.model_dump(mode="json"))
