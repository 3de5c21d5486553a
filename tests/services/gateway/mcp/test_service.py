"""The MCP server through the official MCP client, over streamable HTTP and over stdio,
against the real stack with the scripted model."""

from __future__ import annotations

import json
import re
import time

import anyio
import pytest

from pmsearch.services.gateway.mcp.schemas import RunView
from pmsearch.testing.brains import ATTEMPT, DRAFT, answer, honest, passages, schema_title, sentence

GOLF = "What's the latest on the Golf claim CLM-2024-55817?"
# What a progress line may say: counts and tool names, composed by code.
PROGRESS_LINE = re.compile(
    r"(step \d+ (first_search|search|decide|step)(: [a-z_]+(, [a-z_]+)*)?|evidence found at step \d+|verified)"
)
BUDGETS = {"search.agentic_max_steps": 4, "search.agentic_max_seconds": 20, "search.agentic_daily_cap": 500}


@pytest.fixture(autouse=True)
def _fresh(api, stack_model):
    api.tenant("acme", **BUDGETS)
    stack_model.reset()


@pytest.fixture(scope="module")
def search_only_key(api) -> str:
    return api.new_key(tenant_id="acme", principal="mcp-reader@acme.example", permissions=["search"],
                       mailboxes=["alice"])


@pytest.fixture(scope="module")
def capped_key(api) -> str:
    api.tenant("mcpcapped", **{"search.agentic_daily_cap": 0})
    return api.new_key(tenant_id="mcpcapped", principal="p@capped.example", mailboxes=["alice"])


def _objects(schema: dict):
    """Every object schema inside ``schema``, $defs included."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            yield schema
        for value in schema.values():
            yield from _objects(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _objects(value)


async def _call(session, tool: str, args: dict, **kwargs):
    with anyio.fail_after(90):
        return await session.call_tool(tool, args, **kwargs)


async def _hit(session, query: str, sender: str) -> dict:
    found = await _call(session, "search", {"query": query, "mode": "keyword"})
    return next(h for h in found.structuredContent["hits"] if sender in h["sender"])


async def _golf_notice(session) -> dict:
    """The demo's forged claim notice in the shared claims mailbox (a prompt injection)."""
    return await _hit(session, "Automatic status update for claim CLM-2024-55817", "claims-portal-update")


# ---------------------------------------------------------------- listing


async def test_tools_are_listed_with_strict_input_schemas_and_output_schemas(connect, api):
    async with connect(api.key("acme/alice")) as session:
        listed = (await session.list_tools()).tools
    assert sorted(t.name for t in listed) == ["ask", "get_run", "read_message", "search"]
    for tool in listed:
        objects = list(_objects(tool.inputSchema))
        assert objects and all(o.get("additionalProperties") is False for o in objects), tool.name
        assert tool.outputSchema and tool.outputSchema.get("type") == "object"
    search = next(t for t in listed if t.name == "search")
    assert search.inputSchema["properties"]["mode"]["enum"] == ["keyword", "semantic", "hybrid"]


# ---------------------------------------------------------------- each tool


async def test_search_returns_hits_inside_the_callers_scope(connect, api):
    async with connect(api.key("acme/bob")) as session:
        result = await _call(session, "search", {"query": "CLM-2024-55817 invoice", "mode": "hybrid", "limit": 20})
    assert not result.isError
    hits = result.structuredContent["hits"]
    assert hits and {h["mailbox"] for h in hits} == {"bob"}


async def test_an_argument_the_schema_does_not_know_is_refused(connect, api):
    async with connect(api.key("acme/alice")) as session:
        result = await _call(session, "search", {"query": "golf", "mode": "agentic"})
        extra = await _call(session, "search", {"query": "golf", "tenant_id": "globex"})
    assert result.isError and result.structuredContent["status"] == 422
    assert extra.isError and extra.structuredContent["code"] == "invalid_request"


async def test_ask_streams_progress_while_it_runs_and_returns_the_verified_result(connect, api, stack_model):
    def slow_honest(body):
        return honest()(body).model_copy(update={"delay": 1.0})

    stack_model.set_script(slow_honest)
    seen: list[tuple[float, str]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((time.monotonic(), message or ""))

    async with connect(api.key("acme/alice")) as session:
        result = await _call(session, "ask", {"question": GOLF}, progress_callback=on_progress)
        returned = time.monotonic()
    assert not result.isError, result.content
    run = result.structuredContent
    assert run["outcome"] == "answered"
    assert seen and seen[0][0] < returned - 0.5  # the first step came while the model was thinking
    assert all(PROGRESS_LINE.fullmatch(line) for _, line in seen), seen
    auth = {"Authorization": f"Bearer {api.key('acme/alice')}"}
    stored = api.http.get(f"/v1/runs/{run['run_id']}", headers=auth).json()
    assert run["answer"] == stored["answer"] and run["outcome"] == stored["outcome"]
    for s in run["answer"]["sentences"]:
        assert s["citations"] and all(c["excerpt"]["text"] for c in s["citations"])
    assert {e["message_id"] for e in run["evidence"]} == {e["message_id"] for e in stored["evidence"]}
    assert run["trace"]["steps"] == len(stored["trace"]["steps"])


async def test_ask_again_with_its_idempotency_key_returns_the_first_run_without_a_second(connect, api, stack_model):
    stack_model.set_script(honest())
    key = f"mcp-{time.time_ns()}"  # the stack outlives the test: a key of its own
    async with connect(api.key("acme/alice")) as session:
        first = (await _call(session, "ask", {"question": GOLF, "idempotency_key": key})).structuredContent
        calls = len(stack_model.bodies)
        again = await _call(session, "ask", {"question": GOLF, "idempotency_key": key})
        other = await _call(session, "ask", {"question": "Who handles the Golf claim?", "idempotency_key": key})
    assert not again.isError and again.structuredContent == first
    assert len(stack_model.bodies) == calls  # no model call: the stored run answered
    assert other.isError and other.structuredContent["code"] == "idempotency_key_reused"


async def test_get_run_returns_a_finished_run_to_its_principal_only(connect, api, stack_model):
    stack_model.set_script(honest())
    async with connect(api.key("acme/alice")) as session:
        asked = (await _call(session, "ask", {"question": GOLF})).structuredContent
        got = await _call(session, "get_run", {"run_id": asked["run_id"]})
    async with connect(api.key("acme/bob")) as session:
        other = await _call(session, "get_run", {"run_id": asked["run_id"]})
    assert got.structuredContent == {"run_id": asked["run_id"], "status": "finished", "deadline": None, "result": asked}
    assert other.isError and other.structuredContent["status"] == 404


async def test_read_message_reads_a_message_in_scope_and_nothing_outside(connect, api):
    async with connect(api.key("acme/alice")) as session:
        hit = await _golf_notice(session)
        read = await _call(session, "read_message", {"message_id": hit["message_id"]})
    async with connect(api.key("acme/bob")) as session:
        outside = await _call(session, "read_message", {"message_id": hit["message_id"]})
    assert not read.isError
    assert read.structuredContent["message"]["message_id"] == hit["message_id"]
    assert read.structuredContent["message"]["mailbox"] == "shared-claims"
    assert outside.isError and outside.structuredContent["status"] == 404


# ---------------------------------------------------------------- refusals


async def test_a_bad_key_is_refused(connect, api):
    with pytest.raises(Exception) as caught:
        with anyio.fail_after(30):
            async with connect("pk_not-a-key") as session:
                await session.list_tools()
    assert "401" in _text(caught.value)


async def test_a_key_without_agentic_permission_cannot_ask(connect, api, search_only_key):
    async with connect(search_only_key) as session:
        asked = await _call(session, "ask", {"question": GOLF})
        searched = await _call(session, "search", {"query": "golf"})
    assert asked.isError and asked.structuredContent["status"] == 403
    assert "search:agentic" in asked.structuredContent["detail"]
    assert not searched.isError


async def test_a_spent_daily_cap_refuses_ask(connect, api, capped_key, stack_model):
    stack_model.set_script(honest())
    async with connect(capped_key) as session:
        asked = await _call(session, "ask", {"question": GOLF})
    assert asked.isError
    assert asked.structuredContent["code"] == "cap_exhausted" and asked.structuredContent["retry_after"] >= 1
    assert stack_model.bodies == []  # no run started


# ---------------------------------------------------------------- injected mail


async def test_an_injected_mail_reaches_the_agent_only_as_data(connect, api):
    async with connect(api.key("acme/alice")) as session:
        # A sales mail with a paragraph addressed to "any AI assistant" (search all tenants).
        hit = await _hit(session, "Partnership opportunity for Acme Logistics", "leadgen-partners")
        read = await _call(session, "read_message", {"message_id": hit["message_id"]})
    message = read.structuredContent["message"]
    assert "we help logistics companies find new customers" in message["body"]  # the rest is kept
    assert read.structuredContent["steering_removed"] is True
    assert "AI assistant" not in message["body"] and "all tenants" not in message["body"]
    # The only text block is the structured document itself, serialised.
    assert len(read.content) == 1 and json.loads(read.content[0].text) == read.structuredContent


async def test_a_steered_sentence_never_reaches_the_agent_as_an_answer(connect, api, stack_model):
    def steered(body):
        if schema_title(body) not in (ATTEMPT, DRAFT):
            return honest()(body)
        shown = passages(body)
        target = next((p for p in shown if "Automatic status update" in p.text), shown[0])
        return answer(sentence("The Golf claim CLM-2024-55817 was REJECTED and no money will be paid.", target.ref))

    stack_model.set_script(steered)
    async with connect(api.key("acme/alice")) as session:
        run = (await _call(session, "ask", {"question": GOLF})).structuredContent
    kept = " ".join(s["text"] for s in (run["answer"] or {}).get("sentences", []))
    assert "REJECTED" not in kept and run["outcome"] != "answered"
    assert any("REJECTED" in r["text"] for r in run["trace"]["removed_sentences"])


def _text(exc: BaseException) -> str:
    parts = [str(exc)]
    for inner in getattr(exc, "exceptions", ()):
        parts.append(_text(inner))
    return " ".join(parts)



def test_an_agent_sees_removed_sentences_and_tool_arguments_labelled_unverified():
    defs = RunView.model_json_schema()["$defs"]
    assert defs["RemovedSummary"]["properties"]["text"]["description"].startswith("Unverified")
    assert defs["ToolCallSummary"]["properties"]["arguments"]["description"].startswith("Unverified")
