"""The gateway's request metrics and log line (pmsearch/services/gateway/request_log.py), on a
bare ASGI app: no stack needed."""

from __future__ import annotations

import asyncio
import logging

import pytest
from prometheus_client import REGISTRY
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from pmsearch.services.gateway.request_log import RequestLog
from pmsearch.shared.logging_setup import bind


def _count(route: str, status: str) -> float:
    return REGISTRY.get_sample_value("pm_http_requests_total", {"route": route, "status": status}) or 0.0


async def _answer(request):
    bind(tenant_id="acme")
    return JSONResponse({"ok": True}, status_code=202)


async def _call(app, path: str, messages: list[dict], on_send=None) -> None:
    scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": [], "root_path": "", "scheme": "http", "server": ("test", 80)}

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        messages.append(message)
        if on_send:
            await on_send(message)

    await app(scope, receive, send)


def test_a_request_is_counted_by_route_and_status_and_logged_once_with_what_its_handler_bound(caplog):
    app = RequestLog(Starlette(routes=[Route("/runs/{run_id}", _answer)]))
    before = _count("/runs/{run_id}", "202")
    with caplog.at_level(logging.INFO, logger="pmsearch.gateway"):
        asyncio.run(_call(app, "/runs/r1", []))
    assert _count("/runs/{run_id}", "202") == before + 1
    [line] = [r for r in caplog.records if r.getMessage() == "request"]
    assert (line.route, line.status, line.method) == ("/runs/{run_id}", 202, "GET")


def test_a_path_no_route_matches_is_counted_as_unmatched():
    app = RequestLog(Starlette(routes=[]))
    before = _count("unmatched", "404")
    asyncio.run(_call(app, "/nowhere", []))
    assert _count("unmatched", "404") == before + 1


def test_a_streamed_response_is_counted_when_it_starts_not_when_it_ends():
    body_sent = asyncio.Event()

    async def streaming(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await body_sent.wait()  # an event stream: open until the run ends
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    seen_at_start = []

    async def on_send(message):
        if message["type"] == "http.response.start":
            seen_at_start.append(_count("unmatched", "200"))
            body_sent.set()

    before = _count("unmatched", "200")
    messages: list[dict] = []
    asyncio.run(_call(RequestLog(streaming), "/stream", messages, on_send))
    assert seen_at_start == [before + 1]
    assert [m["type"] for m in messages] == ["http.response.start", "http.response.body"]


@pytest.mark.parametrize("scope_type", ["lifespan", "websocket"])
def test_what_is_not_http_passes_straight_through(scope_type):
    seen = []

    async def inner(scope, receive, send):
        seen.append(scope["type"])

    asyncio.run(RequestLog(inner)({"type": scope_type}, None, None))
    assert seen == [scope_type]
