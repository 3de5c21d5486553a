"""Search filters: the narrowing a caller or a tool call may apply to its scope.

Shared by the gateway (validates ``filters`` on ``POST /v1/search``) and the searcher
(builds index filters from them). Every field can only narrow; unknown fields are
refused. Every list and every item in it is bounded, so a filter cannot be used to
make the searcher build a huge index filter (refused with 422 at the gateway).
"""

from __future__ import annotations

from datetime import date
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

MAX_ITEMS = 20
# Mailbox and folder names as long as ingest accepts them; an address as long as RFC 5321 allows.
Name = Annotated[str, StringConstraints(max_length=200)]
Address = Annotated[str, StringConstraints(max_length=254)]


class Narrowing(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    mailboxes: list[Name] | None = Field(
        default=None, max_length=MAX_ITEMS, description="Only these mailboxes (must be in your scope)."
    )
    folders: list[Name] | None = Field(default=None, max_length=MAX_ITEMS, description="Only these folders.")
    senders: list[Address] | None = Field(
        default=None, max_length=MAX_ITEMS, description="Only mail from these e-mail addresses."
    )
    date_from: date | None = Field(default=None, description="Only mail on or after this day.")
    date_to: date | None = Field(default=None, description="Only mail on or before this day.")
    has_attachment: bool | None = Field(default=None, description="Only mail with (or without) attachments.")
