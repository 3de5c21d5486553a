"""The read-only tools: one registry, read by every stage.

:data:`TOOLS` names each tool with its argument model and its result model. The
searcher dispatches from it, the planner shows a model :func:`tool_prompt_text` and
builds its reply schema from :func:`constrained_args`; nothing else lists the tools.

Each argument model's docstring and field descriptions are what a model reads about the
tool. Every model forbids unknown properties, so its JSON schema says
``additionalProperties: false`` and a call cannot smuggle in scope fields. Arguments can
only narrow the caller's scope: naming a mailbox outside it, or any property a schema
does not know, refuses that call and is recorded as a widen attempt (by the searcher).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, create_model
from pydantic.fields import FieldInfo

from pmsearch.shared.filters import Narrowing
from pmsearch.shared.messages import AttachmentsResult, ContactsResult, HitsResult, MessagesResult

# ------------------------------------------------------------------ arguments


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class SearchArgs(Narrowing):
    """Search the mail for a query. Returns the best matching messages with snippets."""

    query: str = Field(min_length=1, max_length=500, description="What to look for.")
    mode: Literal["keyword", "semantic", "hybrid"] = Field(
        default="hybrid",
        description="keyword for exact terms (numbers, names), semantic for meaning, hybrid for both.",
    )
    limit: int = Field(default=8, ge=1, le=50, description="How many messages to return.")
    thread_latest: int = Field(
        default=0,
        ge=0,
        le=5,
        description="Also return the latest N messages of each thread hit (they may say how a matter ended).",
    )
    thread_neighbours: bool = Field(
        default=False,
        description="Also return the messages on either side of each of the best hits in its thread, by date "
        "(in a thread, usually the message it answers and the reply to it).",
    )


class ReadThreadArgs(_Args):
    """Read every message of a thread, oldest first."""

    thread_id: str = Field(min_length=1, max_length=64, description="A thread_id from a search result.")
    limit: int = Field(default=20, ge=1, le=50, description="How many messages to return.")


class ReadMessageArgs(_Args):
    """Read one message in full: headers, body and attachment names."""

    message_id: str = Field(min_length=1, max_length=64, description="A message_id from a search result.")


class ReadAttachmentTextArgs(_Args):
    """Read the extracted text of a message's attachments (PDF, text, HTML)."""

    message_id: str = Field(min_length=1, max_length=64, description="The message holding the attachments.")
    attachment_name: str | None = Field(default=None, max_length=255, description="One attachment; all if omitted.")


class FindRelatedArgs(Narrowing):
    """Find messages similar in meaning to a given message."""

    message_id: str = Field(min_length=1, max_length=64, description="The message to find others like.")
    limit: int = Field(default=5, ge=1, le=20, description="How many messages to return.")


class ContactsArgs(Narrowing):
    """List the people in the mail: names, addresses and how many messages involve them."""

    query: str | None = Field(default=None, max_length=200, description="Part of a name or address.")
    limit: int = Field(default=20, ge=1, le=100, description="How many people to return.")


# ------------------------------------------------------------------ registry


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, what it takes, what it returns, and what a model reads."""

    name: str
    args: type[BaseModel]
    result: type[BaseModel]
    description: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "description", inspect.cleandoc(self.args.__doc__ or ""))


TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec("search", SearchArgs, HitsResult),
        ToolSpec("read_thread", ReadThreadArgs, MessagesResult),
        ToolSpec("read_message", ReadMessageArgs, MessagesResult),
        ToolSpec("read_attachment_text", ReadAttachmentTextArgs, AttachmentsResult),
        ToolSpec("find_related", FindRelatedArgs, HitsResult),
        ToolSpec("contacts", ContactsArgs, ContactsResult),
    )
}


# ------------------------------------------------------------------ what a model reads


def tool_prompt_text(names: list[str] | None = None, *, offered: Mapping[str, Sequence[str]] | None = None) -> str:
    """The tools as a model reads them: per tool its name and description, then one
    line per argument with its type, default and description; the filters that several
    tools share are listed once, after them. ``offered`` limits a tool to the arguments
    a caller lets its model use. Generated from the argument models, so it cannot drift
    from what the searcher accepts."""
    lines: list[str] = []
    filtered: list[str] = []
    shared_filters: list[str] = []
    for name in names if names is not None else list(TOOLS):
        spec = TOOLS[name]
        allowed = offered.get(name) if offered else None
        own = [f for f in spec.args.model_fields if f not in _FILTERS and (allowed is None or f in allowed)]
        lines.append(f"{name}: {spec.description}")
        lines += _argument_lines(spec.args, own)
        if issubclass(spec.args, Narrowing):
            mine = [f for f in _FILTERS if allowed is None or f in allowed]
            if mine:
                filtered.append(name)
                shared_filters += [f for f in mine if f not in shared_filters]
                lines.append("  - plus the filters below")
    if filtered:
        lines.append(f"Filters of {', '.join(filtered)} (each optional; they can only narrow):")
        lines += _argument_lines(Narrowing, shared_filters)
    return "\n".join(lines)


_FILTERS = tuple(Narrowing.model_fields)


def _argument_lines(model: type[BaseModel], names: list[str]) -> list[str]:
    schema = model.model_json_schema()
    required = set(schema.get("required", ()))
    lines = []
    for prop in names:
        sub = schema["properties"][prop]
        if prop in required:
            how = "required"
        else:
            default = sub.get("default")
            how = "optional" if default is None else f"default {_literal(default)}"
        text = f"  - {prop} ({_type_text(sub)}, {how})"
        if sub.get("description"):
            text += f": {sub['description']}"
        lines.append(text)
    return lines


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def _type_text(sub: dict[str, Any]) -> str:
    """A short reading of a property's JSON schema: ``integer 1-50``, ``list of string``,
    ``"keyword" | "semantic"``, ``date YYYY-MM-DD``."""
    if "anyOf" in sub:
        parts = [_type_text(s) for s in sub["anyOf"] if s.get("type") != "null"]
        return " | ".join(parts)
    if "enum" in sub:
        return " | ".join(_literal(v) for v in sub["enum"])
    if "const" in sub:
        return _literal(sub["const"])
    kind = sub.get("type", "any")
    if kind == "array":
        return f"list of {_type_text(sub.get('items', {}))}"
    if kind == "string" and sub.get("format") == "date":
        return "date YYYY-MM-DD"
    if kind == "integer" and "minimum" in sub and "maximum" in sub:
        return f"integer {sub['minimum']}-{sub['maximum']}"
    return kind


# ------------------------------------------------------------------ constrained arguments


def constrained_args(
    name: str,
    *,
    message_ids: list[str] | tuple[str, ...],
    thread_ids: list[str] | tuple[str, ...],
    mailboxes: list[str] | tuple[str, ...],
) -> type[BaseModel] | None:
    """``name``'s argument model with its ids limited to the ones given: ``message_id``
    and ``thread_id`` become enums of ``message_ids`` / ``thread_ids`` and each of
    ``mailboxes`` one of ``mailboxes``. A model asked for a reply of this schema (by
    grammar-constrained decoding) cannot name an id it has not been shown.

    None when the tool needs ids of a kind there are none of (it cannot be offered).
    Without mailboxes the ``mailboxes`` argument is left out. Every other argument is
    as in the registry, so whatever validates here validates in the searcher too; the
    schema uses plain ``enum``s and no ``$ref``, as llama.cpp's grammar converter wants.
    """
    spec = TOOLS[name]
    allowed = {
        "message_id": tuple(dict.fromkeys(message_ids)),
        "thread_id": tuple(dict.fromkeys(thread_ids)),
        "mailboxes": tuple(dict.fromkeys(mailboxes)),
    }
    fields: dict[str, Any] = {}
    for field_name, info in _own_first(spec.args):
        ids = allowed.get(field_name)
        if ids is None:
            # Unchanged; a copy, so the registry's model keeps its own FieldInfo.
            fields[field_name] = (info.annotation, FieldInfo.merge_field_infos(info))
        elif field_name == "mailboxes":
            if ids:
                fields[field_name] = (
                    list[one_of(ids)] | None,  # type: ignore[misc]
                    Field(default=None, max_length=len(ids), description=info.description),
                )
        elif ids:
            fields[field_name] = (one_of(ids), Field(default=info.default, description=info.description))
        else:
            return None
    return create_model(  # type: ignore[call-overload,no-any-return]
        f"{name}_arguments",
        __config__=ConfigDict(extra="forbid", str_strip_whitespace=True),
        __doc__=spec.description,
        **fields,
    )


def _own_first(model: type[BaseModel]) -> list[tuple[str, FieldInfo]]:
    """The tool's own arguments before the shared filters: a grammar writes properties
    in schema order, so the query or id comes first."""
    items = list(model.model_fields.items())
    return [i for i in items if i[0] not in _FILTERS] + [i for i in items if i[0] in _FILTERS]


def one_of(values: tuple[str, ...]) -> Any:
    """A Literal of ``values`` whose JSON schema is a plain string enum (pydantic would
    write a single value as ``const``)."""
    return Annotated[Literal[values], WithJsonSchema({"type": "string", "enum": list(values)})]
