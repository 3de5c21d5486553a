"""Search filters: the narrowing a caller or a tool call may apply to its scope.

Shared by the gateway (validates ``filters`` on ``POST /v1/search``) and the searcher
(builds index filters from them). Every field can only narrow; unknown fields are
refused.
"""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel, ConfigDict, Field


class Narrowing(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    mailboxes: list[str] | None = Field(
        default=None, max_length=20, description="Only these mailboxes (must be in your scope)."
    )
    folders: list[str] | None = Field(default=None, max_length=20, description="Only these folders.")
    senders: list[str] | None = Field(
        default=None, max_length=20, description="Only mail from these e-mail addresses."
    )
    date_from: date | None = Field(default=None, description="Only mail on or after this day.")
    date_to: date | None = Field(default=None, description="Only mail on or before this day.")
    has_attachment: bool | None = Field(default=None, description="Only mail with (or without) attachments.")
