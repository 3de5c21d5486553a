"""The tool registry: what a model reads about the tools, and argument models whose ids
are limited to the ones a model has been shown."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from pmsearch.shared.messages import AttachmentsResult, ContactsResult, HitsResult, MessagesResult, ToolOutcome
from pmsearch.shared.tools import TOOLS, constrained_args, tool_prompt_text

IDS = {"message_ids": ["m-1", "m-2"], "thread_ids": ["t-1"], "mailboxes": ["alice", "shared-claims"]}


def objects(schema: Any) -> list[dict[str, Any]]:
    """Every object-typed (sub)schema, $defs included."""
    found = []
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            found.append(schema)
        for value in schema.values():
            found += objects(value)
    elif isinstance(schema, list):
        for value in schema:
            found += objects(value)
    return found


def test_registry_names_args_and_results():
    assert {name: spec.result for name, spec in TOOLS.items()} == {
        "search": HitsResult,
        "read_thread": MessagesResult,
        "read_message": MessagesResult,
        "read_attachment_text": AttachmentsResult,
        "find_related": HitsResult,
        "contacts": ContactsResult,
    }
    for name, spec in TOOLS.items():
        assert spec.name == name
        assert spec.description and spec.description == spec.args.__doc__.strip()
        assert spec.args.model_config["extra"] == "forbid"


def test_every_argument_is_described_for_the_model():
    for spec in TOOLS.values():
        for field, info in spec.args.model_fields.items():
            assert info.description, f"{spec.name}.{field}"


def test_prompt_text_is_generated_from_the_models():
    text = tool_prompt_text()
    for spec in TOOLS.values():
        assert f"{spec.name}: {spec.description}" in text
        for field, info in spec.args.model_fields.items():
            assert f"- {field} (" in text and info.description in text
    assert '- mode ("keyword" | "semantic" | "hybrid", default "hybrid")' in text
    assert "- limit (integer 1-50, default 8)" in text
    assert "- query (string, required)" in text
    assert "- date_from (date YYYY-MM-DD, optional)" in text
    assert text.count("- mailboxes (") == 1  # the shared filters are listed once


def test_prompt_text_for_some_tools_only():
    text = tool_prompt_text(["read_message", "read_thread"])
    assert text.splitlines()[0].startswith("read_message: ")
    assert "search:" not in text and "mailboxes" not in text and "Filters" not in text


@pytest.mark.parametrize("name", list(TOOLS))
def test_constrained_schema_is_closed_flat_and_plain(name):
    model = constrained_args(name, **IDS)
    schema = model.model_json_schema()
    assert objects(schema) and all(o.get("additionalProperties") is False for o in objects(schema))
    text = json.dumps(schema)
    assert "$ref" not in text and '"const"' not in text
    props = schema["properties"]
    if "message_id" in props:
        assert props["message_id"]["enum"] == IDS["message_ids"] and props["message_id"]["type"] == "string"
    if "thread_id" in props:
        assert props["thread_id"]["enum"] == IDS["thread_ids"]
    if "mailboxes" in props:
        array = next(s for s in props["mailboxes"]["anyOf"] if s["type"] == "array")
        assert array["items"] == {"type": "string", "enum": IDS["mailboxes"]}


def test_a_single_id_is_still_a_plain_enum():
    schema = constrained_args("read_message", message_ids=["m-1", "m-1"], thread_ids=[], mailboxes=[]).model_json_schema()
    assert schema["properties"]["message_id"]["enum"] == ["m-1"]


def test_an_id_outside_the_enum_fails_validation():
    read = constrained_args("read_message", **IDS)
    assert read.model_validate_json('{"message_id": "m-2"}', strict=True).message_id == "m-2"
    with pytest.raises(ValidationError):
        read.model_validate_json('{"message_id": "m-9"}', strict=True)
    thread = constrained_args("read_thread", **IDS)
    with pytest.raises(ValidationError):
        thread.model_validate({"thread_id": "t-2"})
    search = constrained_args("search", **IDS)
    with pytest.raises(ValidationError):
        search.model_validate({"query": "x", "mailboxes": ["bob"]})
    with pytest.raises(ValidationError):
        search.model_validate({"query": "x", "tenant_id": "globex"})


def test_what_validates_constrained_validates_in_the_searcher():
    search = constrained_args("search", **IDS)
    value = search.model_validate_json(
        '{"query": " golf ", "mailboxes": ["alice"], "date_from": "2024-03-01", "thread_latest": 2}', strict=True
    )
    args = TOOLS["search"].args.model_validate(value.model_dump(exclude_unset=True))
    assert args.query == "golf" and args.mailboxes == ["alice"] and args.thread_latest == 2
    # The tool's own arguments come first: a grammar writes properties in this order.
    assert list(search.model_json_schema()["properties"])[:2] == ["query", "mode"]


def test_a_tool_needing_ids_there_are_none_of_cannot_be_offered():
    none = {"message_ids": [], "thread_ids": [], "mailboxes": ["alice"]}
    assert constrained_args("read_message", **none) is None
    assert constrained_args("read_attachment_text", **none) is None
    assert constrained_args("find_related", **none) is None
    assert constrained_args("read_thread", **none) is None
    assert constrained_args("search", **none) is not None
    assert constrained_args("contacts", **none) is not None


def test_without_mailboxes_the_argument_is_left_out():
    search = constrained_args("search", message_ids=[], thread_ids=[], mailboxes=[])
    assert "mailboxes" not in search.model_json_schema()["properties"]
    with pytest.raises(ValidationError):
        search.model_validate({"query": "x", "mailboxes": ["alice"]})


def test_llama_cpp_converts_the_schemas():
    gbnf = pytest.importorskip("llama_cpp.llama_grammar")
    for name in TOOLS:
        schema = constrained_args(name, **IDS).model_json_schema()
        grammar = gbnf.json_schema_to_gbnf(json.dumps(schema))
        if "message_id" in schema["properties"]:
            assert '"\\"m-1\\"" | "\\"m-2\\""' in grammar  # the ids are the only choice


def test_tool_outcome_output_is_typed_by_kind():
    wire = {
        "call_id": "c",
        "tool": "contacts",
        "arguments": {},
        "ok": True,
        "output": {"kind": "contacts", "contacts": [{"address": "a@x", "name": "A", "messages": 2}]},
    }
    outcome = ToolOutcome.model_validate_json(json.dumps(wire))
    assert isinstance(outcome.output, ContactsResult) and outcome.output.contacts[0].messages == 2
    with pytest.raises(ValidationError):
        ToolOutcome.model_validate({**wire, "output": [{"address": "a@x"}]})
    with pytest.raises(ValidationError):
        ToolOutcome.model_validate({**wire, "output": {"kind": "hits", "hits": [{"from": "a@x"}]}})
    assert ToolOutcome.model_validate({**wire, "output": None}).output is None
