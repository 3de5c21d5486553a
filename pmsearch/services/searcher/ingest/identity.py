"""Which message a raw copy is, and whether a stored message is the same one.

A Message-ID is chosen by whoever sends the mail, so it names a message but does not
prove one: anyone can send new content under a Message-ID they have seen. pmsearch's
message id therefore derives from the Message-ID *and* a digest of the content
(:func:`content_digest`), and two copies are one message only when both agree.

The digest covers what the message says, not how it travelled: the headers pmsearch reads
or that decide how the body decodes, and the body bytes. Delivery headers (Received,
Delivered-To, Return-Path, a spam filter's X-Spam-Flag, Bcc on the sender's copy) differ
per recipient and are left out, so mail sent to alice and bob is one message delivered
twice. It is computed from the raw bytes rather than the parsed text, so a better text
extractor in a later version does not change the ids of mail already indexed.
"""

from __future__ import annotations

import hashlib
import re
from typing import Sequence

from pmsearch.services.searcher.index.base import ChunkPayload
from pmsearch.services.searcher.ingest.schemas import ParsedMessage

DIGEST_VERSION = b"pmsearch content v1\n"
CONTENT_HEADERS = (
    "from", "sender", "to", "cc", "subject", "date", "message-id", "in-reply-to", "references",
    "mime-version", "content-type", "content-transfer-encoding",
)
_FOLD = re.compile(rb"\n[ \t]+")
# mbox files quote body lines starting "From " as ">From "; Maildir does not.
_MBOX_QUOTED = re.compile(rb"(?m)^>+From ")


def content_digest(raw: bytes) -> str:
    """sha256 (hex) of the content headers and the body of one raw message; equal for
    copies of one message whatever their delivery headers, line endings or mbox quoting."""
    data = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n").lstrip(b"\n")
    if data.startswith(b"From "):  # an mbox separator line still attached
        data = data.split(b"\n", 1)[1] if b"\n" in data else b""
    head, _, body = data.partition(b"\n\n")
    fields: dict[bytes, list[bytes]] = {}
    for line in _FOLD.sub(b" ", head).split(b"\n"):
        name, sep, value = line.partition(b":")
        if sep:
            fields.setdefault(name.strip().lower(), []).append(b" ".join(value.split()))
    h = hashlib.sha256(DIGEST_VERSION)
    for name in CONTENT_HEADERS:
        values = fields.get(name.encode(), [])
        h.update(name.encode() + b":" + b"\x00".join(values) + b"\n")
    h.update(b"\n")
    h.update(_MBOX_QUOTED.sub(b"From ", body).rstrip(b"\n"))
    return h.hexdigest()


def same_content(msg: ParsedMessage, names: Sequence[str], stored: Sequence[ChunkPayload], attachment_chars: int) -> bool:
    """Whether ``stored`` (the opening chunks of a message indexed before content digests
    existed) holds exactly what ``msg`` would be indexed as: every header shown, the body
    and each attachment's text. Only then may a new delivery join that message, since
    joining shows its stored text in the new mailbox. ``names`` are the attachment names
    as ingest stores them (made unique)."""
    body = next((p for p in stored if p.kind == "body"), None)
    if body is None:
        return False
    people = [*msg.to, *msg.cc]
    shown = (
        msg.subject, msg.sender.display, msg.sender.email,
        list(dict.fromkeys(a.email for a in people if a.email)),
        list(dict.fromkeys(a.display for a in people if a.display)),
        msg.date.timestamp() if msg.date else None, msg.in_reply_to, msg.references, msg.body_text,
    )
    kept = (
        body.subject, body.sender, body.sender_email, body.recipients, body.recipient_names,
        body.date_ts, body.in_reply_to, body.references, body.source_text,
    )
    if shown != kept or body.attachment_names != list(names):
        return False
    texts = {p.attachment_name: p.source_text for p in stored if p.kind == "attachment"}
    return texts == {name: att.text[:attachment_chars] for name, att in zip(names, msg.attachments) if att.text}
