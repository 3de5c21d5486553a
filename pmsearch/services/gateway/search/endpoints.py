"""``POST /v1/search``: a direct search, or an agentic run streamed or waited for."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse, Response

from pmsearch.services.gateway import metrics
from pmsearch.services.gateway.admission import Hold, unless_client_leaves
from pmsearch.services.gateway.auth import KeyHolder, Principal
from pmsearch.services.gateway.openapi import problems, streams_events
from pmsearch.services.gateway.runs.idempotency import parse_idempotency_key
from pmsearch.services.gateway.search.schemas import SearchRequest, SearchResponse
from pmsearch.services.gateway.state import Gateway, Objects
from pmsearch.shared.errors import PmError
from pmsearch.shared.logging_setup import bind
from pmsearch.shared.messages import RunResult

router = APIRouter(tags=["search"])

IDEMPOTENCY_KEY = (
    "Agentic only: a request sent again with the same key and body gets the run the first one started (its "
    "stream or its result, `Idempotent-Replayed: true`) instead of a new run, for a day. 1-255 printable ASCII "
    "characters. The same key with another body is 422 `idempotency_key_reused`; while the first request is "
    "still starting its run, 409 `idempotency_key_in_use` with `Retry-After`."
)


@router.post(
    "/v1/search",
    response_model=SearchResponse | RunResult,
    responses={
        **streams_events("Hits (keyword, semantic, hybrid), a finished run (agentic), or an SSE stream."),
        **problems(400, 403, 409, 429, 503, 504),
    },
)
async def search(
    request: Request,
    body: SearchRequest,
    principal: KeyHolder,
    gw: Objects,
    accept: Annotated[str | None, Header()] = None,
    idempotency_key: Annotated[str | None, Header(description=IDEMPOTENCY_KEY)] = None,
):
    """Keyword, semantic or hybrid search inside the caller's scope; or an agentic
    run that answers with verified citations. For ``agentic``, send
    ``Accept: text/event-stream`` to stream ``step``, ``evidence``, ``answer`` and
    ``done`` events; otherwise the call waits and returns the finished run.

    Known limit: verification checks that every sentence cites retrieved messages
    and that every quoted phrase occurs in a cited source. A paraphrase without a
    quote can still be wrong while citing a relevant message: read the evidence
    for decisions that matter."""
    if body.mode == "agentic":
        streamed = bool(accept and "text/event-stream" in accept)
        key = parse_idempotency_key(idempotency_key)  # refused before any slot is taken
        # This replica's capacity, then the key's slot: a refused request must not
        # start a run or spend the cap.
        async with gw.admission.hold(
            "event_streams" if streamed else "waiting_runs", principal, key_limit="stream"
        ) as held:
            return await _agentic(request, body, principal, gw, held, streamed, key)
    principal.require("search")
    try:
        async with gw.admission.hold("direct_searches", principal, key_limit="rate"):
            result = await unless_client_leaves(
                request.receive, gw.searches.search(principal.record, body), "direct_searches"
            )
    except PmError as exc:
        metrics.SEARCHES.labels(body.mode, exc.code).inc()
        raise
    metrics.SEARCHES.labels(body.mode, "ok").inc()
    return result


async def _agentic(
    request: Request, body: SearchRequest, principal: Principal, gw: Gateway, held: Hold, streamed: bool,
    idempotency_key: str | None,
) -> Response:
    """Start an agentic run (or follow the one ``idempotency_key`` started); stream it
    or wait for it."""
    meta, followed = await gw.runs.start(principal.record, body, idempotency_key)
    bind(run_id=meta.run_id)
    headers = {"X-Run-Id": meta.run_id, "Location": f"/v1/runs/{meta.run_id}"}
    if followed:
        headers["Idempotent-Replayed"] = "true"
    if streamed:
        # A followed run's stream starts from its first event, with nothing observed twice.
        return held.stream(gw.runs.events(meta, "0-0" if followed else None), headers=headers)
    result = await unless_client_leaves(request.receive, gw.runs.wait(meta, live=not followed), "waiting_runs")
    return JSONResponse(result.model_dump(mode="json"), headers=headers)
