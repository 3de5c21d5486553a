"""``pmsearch mcp``: MCP over stdio, relayed to a running gateway's ``/mcp``.

The tools run in the gateway, which authenticates the key and admits every call (the
permission, the tenant's cap, the signed scope), so this process holds no logic of its
own: each JSON-RPC message read from stdin is POSTed with the caller's key, and what
the gateway streams back (progress notifications, the result) is written to stdout. A
call the gateway refuses, or cannot be reached for, is answered with a JSON-RPC error
naming why; nothing but JSON-RPC is ever written to stdout.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import httpx
from httpx_sse import EventSource
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCMessage, JSONRPCRequest

# JSON-RPC's "server error" range: the gateway refused the call, or could not be reached.
REFUSED = -32001
UNREACHABLE = -32002


class Relay:
    def __init__(self, url: str, key: str) -> None:
        self.endpoint = url.rstrip("/") + "/mcp"
        self.headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}

    async def serve(self) -> None:
        # No read timeout: an ask streams progress for as long as its run's budget.
        timeout = httpx.Timeout(30, read=None)
        async with httpx.AsyncClient(timeout=timeout) as client, stdio_server() as (read, write):
            async with anyio.create_task_group() as tg:
                async for item in read:
                    if isinstance(item, Exception):
                        _note(f"ignored a line that is not JSON-RPC: {item}")
                        continue
                    tg.start_soon(self.forward, client, item, write)
                tg.cancel_scope.cancel()  # stdin closed: the client is gone
            await write.aclose()  # ends the stdout writer, so the process exits

    async def forward(self, client: httpx.AsyncClient, item: SessionMessage, write: Any) -> None:
        root = item.message.root
        request_id = root.id if isinstance(root, JSONRPCRequest) else None
        body = item.message.model_dump(by_alias=True, mode="json", exclude_none=True)
        try:
            async with client.stream("POST", self.endpoint, json=body, headers=self.headers) as resp:
                if resp.status_code == 202:
                    return
                if resp.status_code >= 400:
                    await self._refused(resp, request_id, write)
                    return
                if resp.headers.get("content-type", "").startswith("text/event-stream"):
                    async for event in EventSource(resp).aiter_sse():
                        if event.data:
                            await self._send(write, json.loads(event.data))
                else:
                    await self._send(write, json.loads(await resp.aread()))
        except httpx.HTTPError as exc:
            await self._error(write, request_id, UNREACHABLE, f"cannot reach the gateway at {self.endpoint}: {exc}")
        except ValueError as exc:  # not JSON, or not JSON-RPC: not a pmsearch gateway
            await self._error(write, request_id, UNREACHABLE, f"{self.endpoint} did not answer as MCP: {exc}")

    async def _refused(self, resp: httpx.Response, request_id: Any, write: Any) -> None:
        raw = await resp.aread()
        try:
            problem = json.loads(raw)
            detail = f"{resp.status_code} {problem.get('code') or problem.get('title')}: {problem.get('detail')}"
        except (ValueError, AttributeError):
            problem, detail = None, f"{resp.status_code} from {self.endpoint}"
        await self._error(write, request_id, REFUSED, detail, problem)

    async def _error(self, write: Any, request_id: Any, code: int, message: str, data: Any = None) -> None:
        if request_id is None:  # a notification has no reply; say it on stderr
            _note(message)
            return
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        await self._send(write, {"jsonrpc": "2.0", "id": request_id, "error": error})

    async def _send(self, write: Any, data: Any) -> None:
        for one in data if isinstance(data, list) else [data]:
            version = (one.get("result") or {}).get("protocolVersion") if isinstance(one, dict) else None
            if isinstance(version, str):  # the initialize reply: later requests say what was agreed
                self.headers["MCP-Protocol-Version"] = version
            await write.send(SessionMessage(JSONRPCMessage.model_validate(one)))


def _note(message: str) -> None:
    print(f"pmsearch mcp: {message}", file=sys.stderr, flush=True)


def serve(url: str, key: str) -> None:
    """Relay stdin/stdout to ``url``'s MCP endpoint until stdin closes."""
    anyio.run(Relay(url, key).serve)
