"""The MCP tools' work, through the gateway's own admission: the same permission checks,
this replica's capacities, the key's rate and stream limits, the tenant's daily cap and
the server-signed scope as the HTTP routes. What an ``ask`` returns comes only from the
run's stored result, which only the verifier writes.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from contextlib import aclosing

from pmsearch.services.gateway import metrics
from pmsearch.services.gateway.auth import Principal
from pmsearch.services.gateway.errors import Forbidden, InvalidRequest, NotFound, UpstreamTimeout
from pmsearch.services.gateway.mcp.schemas import (
    AskInput,
    GetRunInput,
    ReadMessageInput,
    ReadMessageOutput,
    RunStatus,
    RunView,
    SearchInput,
    SearchOutput,
    clean_hits,
    message_output,
    run_view,
)
from pmsearch.services.gateway.search.schemas import SearchRequest
from pmsearch.services.gateway.state import Gateway
from pmsearch.shared.filters import Narrowing
from pmsearch.shared.messages import MessagesResult
from pmsearch.shared.tools import TOOLS

# progress(count, message): a line composed by code, never mail text.
Progress = Callable[[int, str], Awaitable[None]]


async def search(gw: Gateway, principal: Principal, args: SearchInput) -> SearchOutput:
    principal.require("search")
    async with gw.admission.hold("direct_searches", principal, key_limit="rate"):
        req = SearchRequest(query=args.query, mode=args.mode, filters=args.filters or Narrowing(), limit=args.limit)
        found = await gw.searches.search(principal.record, req)
    return SearchOutput(query=found.query, mode=found.mode, hits=clean_hits(found.hits), took_ms=found.took_ms)


async def ask(gw: Gateway, principal: Principal, args: AskInput, progress: Progress) -> RunView:
    """Start a run (permission, cap, signed scope: :meth:`RunService.start`), report its
    steps and evidence as they come, and return its stored result."""
    async with gw.admission.hold("event_streams", principal, key_limit="stream"):
        req = SearchRequest(query=args.question, mode="agentic", filters=args.filters or Narrowing(),
                            strategy=args.strategy)
        meta, followed = await gw.runs.start(principal.record, req, args.idempotency_key)
        count = 0
        # Closed however the loop ends (a client gone mid-run too), so the slot goes back now.
        async with aclosing(gw.runs.events(meta, "0-0" if followed else None)) as events:
            async for event in events:
                line = _progress_line(event)
                if line is not None:
                    count += 1
                    await progress(count, line)
    result = await gw.runs.result(meta.run_id)  # the verifier's result, never an event's text
    if result is None:
        raise UpstreamTimeout(f"run {meta.run_id} did not finish in time; call get_run with its run_id later")
    return run_view(result)


async def get_run(gw: Gateway, principal: Principal, args: GetRunInput) -> RunStatus:
    meta = await gw.runs.meta(principal.record, args.run_id)  # 404 unless this principal's, in scope
    result = await gw.runs.result(args.run_id)
    if result is None:
        return RunStatus(run_id=args.run_id, status="running", deadline=meta.deadline)
    return RunStatus(run_id=args.run_id, status="finished", result=run_view(result))


async def read_message(gw: Gateway, principal: Principal, args: ReadMessageInput) -> ReadMessageOutput:
    """One message, read by the searcher inside the key's signed scope (``pm:lookups``)."""
    principal.require("search")
    async with gw.admission.hold("direct_searches", principal, key_limit="rate"):
        reply = await gw.searches.lookup(principal.record, "read_message", {"message_id": args.message_id})
    outcome = reply.outcome
    if outcome is None:
        raise Forbidden(reply.error or "scope refused")
    if not outcome.ok:
        if outcome.error_code == "not_found":
            raise NotFound(f"no message {args.message_id} in this key's scope")
        raise InvalidRequest(outcome.error or "the message could not be read")
    if not isinstance(outcome.output, MessagesResult) or not outcome.output.messages:
        raise NotFound(f"no message {args.message_id} in this key's scope")
    return message_output(outcome.output.messages[0])


def _progress_line(event: dict) -> str | None:
    """A progress line for a relayed SSE event. Composed from counts and the tool
    registry's names only: mail text and model-written arguments stay out of it."""
    kind = event.get("event")
    data = json.loads(event.get("data") or "{}")
    if kind == "step":
        tools = [c.get("tool") for c in data.get("calls") or [] if c.get("tool") in TOOLS]
        what = f": {', '.join(tools)}" if tools else ""
        label = data.get("kind") if data.get("kind") in _KINDS else "step"
        return f"step {int(data.get('step') or 0)} {label}{what}"
    if kind == "evidence":
        return f"evidence found at step {int(data.get('step') or 0)}"
    if kind == "done":
        return "verified"
    return None


_KINDS = frozenset({"first_search", "search", "decide"})


def record_call(tool: str, result: str) -> None:
    metrics.MCP_TOOL_CALLS.labels(tool, result).inc()
