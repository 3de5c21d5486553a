"""What the parser makes of one raw message, and pmsearch's stable ids for it."""

from __future__ import annotations

import hashlib
import re
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

# Reply/forward markers in the languages our users' correspondents write in. "Re[2]:" and
# "Re^2:" come from older clients; "AW"/"WG" are German, "SV"/"VS" Nordic, "TR" French.
_PREFIX = re.compile(
    r"^\s*(?:re|fwd?|aw|wg|sv|vs|tr|antw|rif|r)\s*(?:\[\d+\]|\^\d+)?\s*:\s*",
    re.IGNORECASE,
)
_SPACE = re.compile(r"\s+")


class ParsedAttachment(BaseModel):
    model_config = ConfigDict(extra="forbid")

    filename: str
    content_type: str
    size: int
    text: str | None = None  # None when the type has no text or extraction failed


class Address(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = ""
    email: str = ""  # lower-cased

    @property
    def display(self) -> str:
        """``Name <addr>`` as shown to people; just the address when there is no name."""
        if self.name and self.email:
            return f"{self.name} <{self.email}>"
        return self.name or self.email


class ParsedMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rfc_message_id: str  # without angle brackets; synthetic when the header is missing
    in_reply_to: str | None = None
    references: list[str] = Field(default_factory=list)
    subject: str = ""
    normalized_subject: str = ""
    sender: Address = Field(default_factory=Address)
    to: list[Address] = Field(default_factory=list)
    cc: list[Address] = Field(default_factory=list)
    date: datetime | None = None  # always tz-aware when set
    body_text: str = ""
    attachments: list[ParsedAttachment] = Field(default_factory=list)
    quarantined: bool = False
    folder: str = "INBOX"
    notes: list[str] = Field(default_factory=list)  # what an ingest limit cut, one line each
    # The Authentication-Results headers as received, topmost first; which are believed
    # is decided at ingest (authentication.py), never here.
    authentication_results: list[str] = Field(default_factory=list)

    @property
    def has_reply_prefix(self) -> bool:
        return bool(_PREFIX.match(self.subject))


def strip_subject_prefixes(subject: str) -> str:
    """The subject without any stack of Re:/Fwd:/AW:/WG: prefixes."""
    prev = None
    s = subject or ""
    while prev != s:
        prev = s
        s = _PREFIX.sub("", s, count=1)
    return s


def normalize_subject(subject: str) -> str:
    """Key for the subject-fallback threading: no prefixes, casefolded, single spaces."""
    return _SPACE.sub(" ", strip_subject_prefixes(subject)).strip().casefold()


def _key(prefix: str, tenant_id: str, value: str) -> str:
    digest = hashlib.sha256(f"{tenant_id}\x00{value}".encode()).hexdigest()
    return prefix + digest[:12]


def message_key(tenant_id: str, rfc_message_id: str, content_digest: str) -> str:
    """pmsearch's public message id: stable per (tenant, Message-ID, content digest),
    opaque, short. The digest (``identity.content_digest``) is part of it because a
    Message-ID alone is whatever the sender wrote: new content under a known Message-ID
    is another message, with another id."""
    return _key("m", tenant_id, f"{rfc_message_id}\x00{content_digest}")


def legacy_message_key(tenant_id: str, rfc_message_id: str) -> str:
    """The id index schema 1 gave a message (from the Message-ID alone). A message
    migrated from such an index keeps it, so answers that cited it stay valid."""
    return _key("m", tenant_id, rfc_message_id)


def thread_key(tenant_id: str, root: str) -> str:
    """A thread id derived from the thread's root (a Message-ID, or a subject key)."""
    return _key("t", tenant_id, root)
