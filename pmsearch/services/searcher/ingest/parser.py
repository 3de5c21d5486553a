"""Raw RFC 822 bytes → :class:`ParsedMessage`.

The stdlib ``email`` package does the MIME work; this module decides what counts as a
message at all, which parts are the body and which are attachments, and how each part
becomes text. Headers and parts that are merely broken degrade (a missing date, an
attachment without text); only input that is not a mail message, or is over a limit
that refuses it (:class:`IngestLimits`), raises. What a limit cut is noted on the message.

PDF and HTML extraction runs under a per-part time limit; in the searcher the whole parse
runs in a memory- and time-bounded subprocess (``sandbox.py``).
"""

from __future__ import annotations

import hashlib
import mimetypes
import re
from datetime import UTC, datetime
from email import policy
from email.message import Message
from email.parser import BytesParser
from email.utils import getaddresses, parsedate_to_datetime

from pmsearch.services.searcher.errors import MalformedMessage, MessageTooLarge
from pmsearch.services.searcher.ingest.documents import reader_for
from pmsearch.services.searcher.ingest.limits import IngestLimits, megabytes
from pmsearch.services.searcher.ingest.reading import PartReader
from pmsearch.services.searcher.ingest.schemas import Address, ParsedAttachment, ParsedMessage, normalize_subject
from pmsearch.services.searcher.ingest.textutil import clean_text, decode_bytes, html_text, pdf_text

QUARANTINE_FOLDERS = {"quarantine", "junk", "spam"}
# A message forwarded inside a forwarded message inside ...: people nest a few; a file
# that nests thousands only wants to exhaust the parser.
MAX_FORWARD_NESTING = 8
# Enough for every hop that checks (the topmost are the trusted ones); a forger can add
# any number below them.
MAX_AUTH_HEADERS = 10

# A header line: a field name of printable ASCII without ':' or space, then a colon.
_FIELD = re.compile(rb"^[!-9;-~]+:")
_KNOWN = {"from", "to", "cc", "subject", "date", "message-id", "received", "mime-version",
          "in-reply-to", "references", "return-path", "sender", "reply-to", "delivered-to"}
_MSGID = re.compile(r"<([^<>\s]+)>")


def parse_message(raw: bytes, *, folder: str = "INBOX", limits: IngestLimits | None = None) -> ParsedMessage:
    """Parse one message; raise :class:`MalformedMessage` if ``raw`` is not mail and
    :class:`MessageTooLarge` if it is over ``limits.max_message_bytes``."""
    limits = limits or IngestLimits()
    check_size(raw, limits)
    raw = _strip_mbox_from(raw)
    _check_looks_like_mail(raw)
    try:
        msg = BytesParser(policy=policy.default).parsebytes(raw)
    except Exception as exc:  # the parser is lenient; this is a last line of defence
        raise MalformedMessage(f"unparseable message: {exc}") from exc
    if not any(k.lower() in _KNOWN for k in msg.keys()):
        raise MalformedMessage("no mail headers (From, Subject, Date, Message-ID, ...)")

    reader = PartReader(limits)
    body, attachments = _content(msg, reader)
    subject = _header(msg, "subject")
    rfc_id = first_id(_header(msg, "message-id"))
    if not rfc_id:
        # Stable across re-imports of the same bytes, so idempotency still holds.
        rfc_id = "sha256-" + hashlib.sha256(raw).hexdigest()[:40] + "@pmsearch.invalid"
    senders = _addresses(msg, "from") or _addresses(msg, "sender")
    date = _date(msg)
    notes = reader.finish()
    now = datetime.now(UTC)
    if date is not None and (date - now).total_seconds() > limits.max_date_skew_seconds:
        notes.append(f"date {date.isoformat()} is in the future: taken as the time of import")
        date = now
    return ParsedMessage(
        rfc_message_id=rfc_id,
        in_reply_to=first_id(_header(msg, "in-reply-to")),
        references=_ids(_header(msg, "references")),
        subject=subject,
        normalized_subject=normalize_subject(subject),
        sender=senders[0] if senders else Address(),
        to=_addresses(msg, "to"),
        cc=_addresses(msg, "cc"),
        date=date,
        body_text=body,
        attachments=attachments,
        quarantined=is_quarantined(msg, folder),
        folder=folder or "INBOX",
        notes=notes,
        authentication_results=[str(v) for v in msg.get_all("authentication-results") or []][:MAX_AUTH_HEADERS],
    )


def check_size(raw: bytes, limits: IngestLimits) -> None:
    if len(raw) > limits.max_message_bytes:
        raise MessageTooLarge(
            f"message is {megabytes(len(raw))}, over the {megabytes(limits.max_message_bytes)} limit "
            "(PM_INGEST_MAX_MESSAGE_BYTES)"
        )


def is_quarantined(msg: Message, folder: str) -> bool:
    """Quarantine by folder (last path segment, so ``INBOX/Junk`` counts) or by a
    spam filter's verdict header."""
    leaf = re.split(r"[/.\\]", folder or "")[-1].strip().casefold()
    if leaf in QUARANTINE_FOLDERS:
        return True
    return (
        _header(msg, "x-quarantine").strip().lower() in {"yes", "true", "1"}
        or _header(msg, "x-spam-flag").strip().upper() == "YES"
    )


# -- input checks -------------------------------------------------------------------


def _strip_mbox_from(raw: bytes) -> bytes:
    """Drop an mbox ``From `` separator line if the bytes still carry one."""
    raw = raw.lstrip(b"\r\n")
    if raw.startswith(b"From "):
        nl = raw.find(b"\n")
        return raw[nl + 1 :] if nl >= 0 else b""
    return raw


def _check_looks_like_mail(raw: bytes) -> None:
    if not raw.strip():
        raise MalformedMessage("empty message")
    end = raw.find(b"\n\n")
    end2 = raw.find(b"\r\n\r\n")
    cut = min(e for e in (end, end2, 65536) if e >= 0)
    head = raw[:cut]
    if b"\x00" in head:
        raise MalformedMessage("binary data, not a mail message")
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 13))
    if controls > len(head) // 50:
        raise MalformedMessage("binary data, not a mail message")
    if not _FIELD.match(raw):
        raise MalformedMessage("no header section: not an RFC 822 message")


# -- headers ------------------------------------------------------------------------


def _header(msg: Message, name: str) -> str:
    """A header as text, with RFC 2047 decoded; '' when absent or undecodable."""
    try:
        value = msg.get(name)
    except Exception:  # a defective header can raise on access under policy.default
        value = next((v for k, v in msg.raw_items() if k.lower() == name), None)
    if value is None:
        return ""
    return _fix_8bit(" ".join(str(value).split()))


def _fix_8bit(text: str) -> str:
    """Raw 8-bit header bytes arrive as surrogate escapes; decode them properly."""
    if not any("\udc80" <= ch <= "\udcff" for ch in text):
        return text
    data = text.encode("utf-8", "surrogateescape")
    return decode_bytes(data, None)


def _ids(value: str) -> list[str]:
    found = _MSGID.findall(value)
    if not found:  # some clients omit the brackets
        found = [t for t in value.split() if "@" in t]
    seen: list[str] = []
    for mid in found:
        mid = mid.strip().strip("<>")
        if mid and mid not in seen:
            seen.append(mid)
    return seen


def first_id(value: str) -> str | None:
    ids = _ids(value)
    return ids[0] if ids else None


def _addresses(msg: Message, name: str) -> list[Address]:
    out: list[Address] = []
    try:
        header = msg.get(name)
        pairs = [(a.display_name, a.addr_spec) for a in header.addresses] if header is not None else []
    except Exception:
        pairs = getaddresses([_header(msg, name)])
    for display, addr in pairs:
        addr = _fix_8bit(addr or "").strip().strip("<>").lower()
        display = _fix_8bit(display or "").strip().strip('"')
        if addr or display:
            out.append(Address(name=display, email=addr))
    return out


def _date(msg: Message) -> datetime | None:
    raw = _header(msg, "date")
    if not raw:
        return None
    try:
        dt = parsedate_to_datetime(raw)
    except Exception:
        return None
    if dt is None:
        return None
    # "-0000" means "zone unknown" (RFC 5322) and parses naive; UTC is the honest guess.
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


# -- MIME walk ----------------------------------------------------------------------


def _content(msg: Message, reader: PartReader) -> tuple[str, list[ParsedAttachment]]:
    bodies: list[str] = []
    attachments: list[ParsedAttachment] = []
    _walk(msg, bodies, attachments, reader)
    return clean_text("\n\n".join(b for b in bodies if b.strip()), limit=None), attachments


def _walk(part: Message, bodies: list[str], attachments: list[ParsedAttachment], reader: PartReader) -> None:
    ctype = part.get_content_type()
    if part.is_multipart() and ctype != "message/rfc822":
        children = part.get_payload() or []
        if ctype == "multipart/alternative":
            children = _pick_alternative(children)
        for child in children:
            _walk(child, bodies, attachments, reader)
        return
    if ctype == "message/rfc822" or ctype == "message/global":
        _forwarded(part, bodies, attachments, reader)
        return
    if _is_body(part):
        text = _leaf_text(part, reader)
        if text:
            bodies.append(text)
        return
    if len(attachments) >= reader.limits.max_attachments:
        reader.dropped += 1
        return
    if _is_saved_message(part):
        # A message saved as a file and attached (.eml) is forwarded mail as much as a
        # message/rfc822 part is: its sender, date and subject shown as its own.
        inner = _saved_message(part)
        if inner is not None:
            _forwarded_message(inner, bodies, attachments, reader)
            return
    attachments.append(_attachment(part, len(attachments) + 1, reader))


def _pick_alternative(children: list[Message]) -> list[Message]:
    """From alternatives, keep plain text when it has content, else the richest other."""
    for child in children:
        if child.get_content_type() == "text/plain" and _has_text(child):
            return [child]
    return children[-1:]  # RFC 2046: the last alternative is the preferred one


def _has_text(part: Message) -> bool:
    return bool(decode_bytes(_payload(part), part.get_content_charset()).replace("\x00", "").strip())


def _is_body(part: Message) -> bool:
    """Plain or HTML text the sender wrote, as opposed to a file they attached."""
    if part.get_content_type() not in {"text/plain", "text/html"}:
        return False  # text/csv, text/calendar, ... are files even when shown inline
    if part.get_content_disposition() == "attachment":
        return False
    # A named text part is a file, even "inline": Apple Mail attaches .txt files that way,
    # while no client names the part that holds the text someone typed.
    return not _filename(part)


def _forwarded(part: Message, bodies: list[str], attachments: list[ParsedAttachment], reader: PartReader) -> None:
    """A forwarded message's headers and text go into the body, its files into ours."""
    inner = part.get_payload()
    inner = inner[0] if isinstance(inner, list) and inner else inner
    if isinstance(inner, Message):
        _forwarded_message(inner, bodies, attachments, reader)


def _forwarded_message(
    inner: Message, bodies: list[str], attachments: list[ParsedAttachment], reader: PartReader
) -> None:
    if reader.nesting >= MAX_FORWARD_NESTING:
        reader.notes.append(f"forwarded messages nested more than {MAX_FORWARD_NESTING} deep: the inner ones not read")
        return
    reader.nesting += 1
    try:
        _forwarded_inner(inner, bodies, attachments, reader)
    finally:
        reader.nesting -= 1


def _forwarded_inner(
    inner: Message, bodies: list[str], attachments: list[ParsedAttachment], reader: PartReader
) -> None:
    header_lines = ["---------- Forwarded message ----------"]
    for name in ("from", "date", "subject", "to", "cc"):
        value = _header(inner, name)
        if value:
            header_lines.append(f"{name.capitalize()}: {value}")
    head = reader.take("\n".join(header_lines), "forwarded message")
    inner_bodies: list[str] = []
    _walk(inner, inner_bodies, attachments, reader)
    if head or inner_bodies:
        bodies.append(head + "\n\n" + "\n\n".join(inner_bodies))


def _payload(part: Message) -> bytes:
    try:
        data = part.get_payload(decode=True)
    except Exception:
        data = None
    if isinstance(data, bytes):
        return data
    raw = part.get_payload()
    return raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) else b""


def _leaf_text(part: Message, reader: PartReader) -> str:
    text = decode_bytes(_payload(part), part.get_content_charset())
    if part.get_content_subtype() == "html":
        return reader.extract(html_text, text, "body")
    return reader.plain(text, "body")


def _attachment(part: Message, n: int, reader: PartReader) -> ParsedAttachment:
    data = _payload(part)
    ctype = part.get_content_type()
    filename = _filename(part) or f"attachment-{n}{mimetypes.guess_extension(ctype) or '.bin'}"
    text = _attachment_text(part, ctype, filename, data, reader)
    return ParsedAttachment(filename=filename, content_type=ctype, size=len(data), text=text)


def _is_saved_message(part: Message) -> bool:
    return _filename(part).lower().endswith(".eml")


def _saved_message(part: Message) -> Message | None:
    """The message an attached ``.eml`` file holds, None when it holds none."""
    data = _payload(part)
    try:
        _check_looks_like_mail(data)
        inner = BytesParser(policy=policy.default).parsebytes(data)
    except Exception:  # noqa: BLE001 - not mail after all: kept as a file
        return None
    return inner if any(k.lower() in _KNOWN for k in inner.keys()) else None


def _filename(part: Message) -> str:
    try:
        return _fix_8bit(part.get_filename() or "").strip()
    except Exception:  # broken RFC 2231 parameters
        return ""


def _attachment_text(part: Message, ctype: str, filename: str, data: bytes, reader: PartReader) -> str | None:
    """Text for the types we can read; by declared type, else by file extension because
    many clients label every file application/octet-stream."""
    ext = filename.lower().rsplit(".", 1)[-1] if "." in filename else ""
    if ctype == "application/pdf" or ext == "pdf" or data.startswith(b"%PDF-"):
        return reader.extract(pdf_text, data, filename) or None
    if ctype == "text/html" or ext in {"html", "htm"}:
        return reader.extract(html_text, decode_bytes(data, part.get_content_charset()), filename) or None
    document = reader_for(ctype, filename)
    if document is not None:
        return reader.extract(document, data, filename) or None
    if ctype.startswith("text/") or ext in {"txt", "csv", "md", "log", "vcf"}:
        return reader.plain(decode_bytes(data, part.get_content_charset()), filename) or None
    return None
