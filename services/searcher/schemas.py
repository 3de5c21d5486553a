"""The read-only tools' arguments. Each docstring and field description is what a model
reads about the tool; each model forbids unknown properties, so its JSON schema says
``additionalProperties: false`` and a call cannot smuggle in scope fields.

Arguments can only narrow the caller's scope. Naming a mailbox outside it, or any
property a schema does not know, refuses that call and is recorded as a widen attempt.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.filters import Narrowing


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


class ReadThreadArgs(_Args):
    """Read every message of a thread, oldest first."""

    thread_id: str = Field(min_length=1, max_length=64, description="A thread_id from a search result.")
    limit: int = Field(default=20, ge=1, le=50)


class ReadMessageArgs(_Args):
    """Read one message in full: headers, body and attachment names."""

    message_id: str = Field(min_length=1, max_length=64, description="A message_id from a search result.")


class ReadAttachmentTextArgs(_Args):
    """Read the extracted text of a message's attachments (PDF, text, HTML)."""

    message_id: str = Field(min_length=1, max_length=64)
    attachment_name: str | None = Field(default=None, max_length=255, description="One attachment; all if omitted.")


class FindRelatedArgs(Narrowing):
    """Find messages similar in meaning to a given message."""

    message_id: str = Field(min_length=1, max_length=64)
    limit: int = Field(default=5, ge=1, le=20)


class ContactsArgs(Narrowing):
    """List the people in the mail: names, addresses and how many messages involve them."""

    query: str | None = Field(default=None, max_length=200, description="Part of a name or address.")
    limit: int = Field(default=20, ge=1, le=100)


TOOLS: dict[str, type[_Args]] = {
    "search": SearchArgs,
    "read_thread": ReadThreadArgs,
    "read_message": ReadMessageArgs,
    "read_attachment_text": ReadAttachmentTextArgs,
    "find_related": FindRelatedArgs,
    "contacts": ContactsArgs,
}


def tool_schemas() -> list[dict[str, Any]]:
    """OpenAI-style function descriptions of every tool, for a model's prompt."""
    out = []
    for name, model in TOOLS.items():
        schema = model.model_json_schema()
        out.append({"name": name, "description": (model.__doc__ or "").strip(), "parameters": schema})
    return out


# ------------------------------------------------------------------ outputs


class MessageView(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message_id: str
    thread_id: str
    mailbox: str
    folder: str
    sender: str
    recipients: list[str]
    date: str | None
    subject: str
    attachment_names: list[str]
    body: str


class AttachmentView(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message_id: str
    name: str
    text: str


class Contact(BaseModel):
    model_config = ConfigDict(extra="forbid")

    address: str
    name: str
    messages: int
