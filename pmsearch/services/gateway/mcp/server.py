"""The MCP server: four tools with strict input schemas and structured results.

Built on the SDK's low-level server, which takes each tool's JSON schema as written (the
high-level one derives them from signatures and cannot say ``additionalProperties:
false`` for every object). Each call is authenticated before it reaches this module
(:mod:`pmsearch.services.gateway.mcp.endpoints`): the handler finds the caller's principal and the
gateway's objects on the HTTP request that carried the call.

A refused call (bad permission, spent cap, unknown run) is a tool error whose
structured content is the problem document the HTTP API would have sent.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import jsonschema
import mcp.types as types
from mcp.server.lowlevel import Server
from pydantic import BaseModel, ValidationError

from pmsearch.services.gateway.auth import Principal
from pmsearch.services.gateway.errors import InvalidRequest
from pmsearch.services.gateway.mcp import schemas as m
from pmsearch.services.gateway.mcp import service as tools
from pmsearch.services.gateway.state import Gateway
from pmsearch.shared.errors import PmError

log = logging.getLogger("pmsearch.gateway.mcp")

INSTRUCTIONS = (
    "pmsearch searches the caller's mail and answers questions with citations that code has "
    "verified. Use `ask` for questions (the answer's sentences each cite messages, with the "
    "excerpt that supports them), `search` to find messages, `read_message` to read one. "
    + m.UNTRUSTED
)

# name -> (input model, output model, description)
TOOLS: dict[str, tuple[type[BaseModel], type[BaseModel], str]] = {
    "search": (m.SearchInput, m.SearchOutput, "Search the caller's mail (keyword, semantic or hybrid). "),
    "ask": (
        m.AskInput,
        m.RunView,
        "Ask a question of the caller's mail. Runs an agentic search; progress notifications report its "
        "steps and evidence while it runs. Returns the verified result: answer sentences with their "
        "citations and excerpts, the outcome, the evidence and a summary of the trace. Spends one unit "
        "of the tenant's daily cap. ",
    ),
    "get_run": (m.GetRunInput, m.RunStatus, "A run this key's principal started: its verified result, or "
                "its status while it runs. "),
    "read_message": (m.ReadMessageInput, m.ReadMessageOutput, "Read one message of the caller's mail in full. "),
}


# Built once: schema generation and validator construction cost milliseconds a call.
_INPUT_SCHEMAS = {name: inp.model_json_schema() for name, (inp, _, _) in TOOLS.items()}
_VALIDATORS = {name: jsonschema.Draft202012Validator(schema) for name, schema in _INPUT_SCHEMAS.items()}
_TOOLS = [
    types.Tool(
        name=name,
        description=description + m.UNTRUSTED,
        inputSchema=_INPUT_SCHEMAS[name],
        outputSchema=out.model_json_schema(),
        annotations=types.ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False),
    )
    for name, (_, out, description) in TOOLS.items()
]


def tool_list() -> list[types.Tool]:
    return list(_TOOLS)


def _error(exc: PmError, tool: str) -> types.CallToolResult:
    problem = exc.problem(f"mcp:{tool}")
    tools.record_call(tool if tool in TOOLS else "unknown", exc.code)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"{exc.status} {exc.code}: {exc.detail}")],
        structuredContent=problem,
        isError=True,
    )


def _parse(name: str, arguments: dict[str, Any]) -> BaseModel:
    model = TOOLS[name][0]
    error = jsonschema.exceptions.best_match(_VALIDATORS[name].iter_errors(arguments))
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "arguments"
        raise InvalidRequest(f"{where}: {error.message}")
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InvalidRequest(f"{'.'.join(map(str, first['loc'])) or 'arguments'}: {first['msg']}") from None


def build_server() -> Server:
    server: Server = Server("pmsearch", version="0.1.0", instructions=INSTRUCTIONS)

    @server.list_tools()
    async def _list() -> list[types.Tool]:
        return tool_list()

    @server.call_tool(validate_input=False)  # validated below, so a refusal is a problem document
    async def _call(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        ctx = server.request_context
        state = getattr(ctx.request, "state", None)
        principal: Principal | None = getattr(state, "pm_principal", None)
        gw: Gateway | None = getattr(state, "pm_gateway", None)
        if principal is None or gw is None:
            raise RuntimeError("MCP call without an authenticated request")  # mounted wrongly: a bug
        try:
            if name not in TOOLS:
                raise InvalidRequest(f"no tool {name!r}; the tools are {', '.join(TOOLS)}")
            args = _parse(name, arguments or {})
            out = await _run(gw, principal, name, args, ctx)
        except PmError as exc:
            return _error(exc, name)
        except Exception:
            # Never internals (a Redis reply, a stack) to the caller: logged, and one line.
            log.exception("MCP tool %s failed", name if name in TOOLS else "unknown")
            return _error(PmError("unexpected error; it has been logged"), name)
        tools.record_call(name, "ok")
        data = out.model_dump(mode="json")
        # The text block is the same document, serialised: mail text stays inside its fields.
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
            structuredContent=data,
            isError=False,
        )

    return server


async def _run(gw: Gateway, principal: Principal, name: str, args: Any, ctx: Any) -> BaseModel:
    if name == "search":
        return await tools.search(gw, principal, args)
    if name == "get_run":
        return await tools.get_run(gw, principal, args)
    if name == "read_message":
        return await tools.read_message(gw, principal, args)
    token = ctx.meta.progressToken if ctx.meta else None

    async def progress(count: int, line: str) -> None:
        if token is not None:
            await ctx.session.send_progress_notification(
                token, float(count), message=line, related_request_id=str(ctx.request_id)
            )

    return await tools.ask(gw, principal, args, progress)
