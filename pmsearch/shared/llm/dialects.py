"""How each provider family is asked for structured output, and where it puts it.

- ``json_schema``: ``response_format: {"type": "json_schema", "json_schema": {...}}``
  (OpenAI, Workers AI, vLLM, llama.cpp's own ``llama-server``).
- ``json_object_schema``: ``response_format: {"type": "json_object", "schema": {...}}``
  (llama-cpp-python's server, which refuses the form above with a 422).
- ``tools``: one function whose parameters are the schema, forced with ``tool_choice``;
  the object comes back as the call's arguments.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel

Dialect = Literal["json_schema", "json_object_schema", "tools"]


def schema_of(schema_model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema sent to the provider (pydantic's, which already carries
    ``additionalProperties: false`` for models that forbid extra fields)."""
    return copy.deepcopy(_schema(schema_model))  # a copy: the caller may change its request


# The stages reuse their reply models (built once per set of passage refs), so each
# schema is generated once per process rather than on every call.
@lru_cache(maxsize=256)
def _schema(schema_model: type[BaseModel]) -> dict[str, Any]:
    return schema_model.model_json_schema()


def response_fields(dialect: Dialect, name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The request-body fields that ask for output matching ``schema``."""
    if dialect == "json_schema":
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": True},
            }
        }
    if dialect == "json_object_schema":
        return {"response_format": {"type": "json_object", "schema": schema}}
    if dialect == "tools":
        return {
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": schema.get("description") or f"Return the {name} object.",
                        "parameters": schema,
                    },
                }
            ],
            "tool_choice": {"type": "function", "function": {"name": name}},
        }
    raise ValueError(f"unknown model output dialect: {dialect!r}")


def reply_text(dialect: Dialect, message: dict[str, Any]) -> str:
    """The text holding the object in an assistant ``message``.

    With tools, the arguments of the first tool call; providers differ on whether those
    are a JSON string or an object, and some answer in plain content instead, so both
    are accepted (the text is validated afterwards anyway)."""
    if dialect == "tools":
        for call in message.get("tool_calls") or []:
            arguments = (call.get("function") or {}).get("arguments")
            if isinstance(arguments, str):
                return arguments
            if isinstance(arguments, dict):
                return json.dumps(arguments)
    content = message.get("content")
    if isinstance(content, list):  # content parts: join the text parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""
