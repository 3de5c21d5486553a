"""MCP over streamable HTTP at ``/mcp`` on the gateway, authenticated by API key.

Stateless: each POST carries its own key and is served whole by the replica that gets
it (progress notifications stream on that POST's response), so replicas need no
session affinity and a revoked key stops working at its next call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeout
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from pmsearch.services.gateway.auth import api_key
from pmsearch.services.gateway.errors import Overloaded
from pmsearch.services.gateway.mcp.server import build_server
from pmsearch.shared.errors import PmError

PATH = "/mcp"


class McpEndpoint:
    """Authenticate the key, then hand the request to the MCP session manager with the
    caller's principal and the gateway's objects on the request's state."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            principal = await api_key(request)
        except PmError as exc:
            await self._problem(exc, scope, receive, send)
            return
        except (RedisConnectionError, RedisTimeout):
            await self._problem(Overloaded("the gateway cannot reach its store right now", retry_after=1),
                                scope, receive, send)
            return
        scope.setdefault("state", {})
        scope["state"]["pm_principal"] = principal
        scope["state"]["pm_gateway"] = request.app.state.gateway
        await self.manager.handle_request(scope, receive, send)

    @staticmethod
    async def _problem(exc: PmError, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else {}
        if "retry_after" in exc.extra:
            headers["Retry-After"] = str(exc.extra["retry_after"])
        response = JSONResponse(exc.problem(PATH), status_code=exc.status, headers=headers,
                                media_type="application/problem+json")
        await response(scope, receive, send)


def mount(app: FastAPI) -> None:
    """Serve MCP at ``/mcp``; its session manager runs inside the app's lifespan."""
    manager = StreamableHTTPSessionManager(app=build_server(), stateless=True, json_response=False)
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        async with inner(a) as value, manager.run():
            yield value

    app.router.lifespan_context = lifespan
    app.router.routes.append(Route(PATH, endpoint=McpEndpoint(manager), methods=["GET", "POST", "DELETE"],
                                   include_in_schema=False))
