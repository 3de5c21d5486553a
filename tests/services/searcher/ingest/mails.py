"""Builders for real RFC 822 test messages (stdlib ``email``) and real PDFs (fpdf2)."""

from __future__ import annotations

from datetime import UTC, datetime
from email import policy
from email.message import EmailMessage
from email.utils import format_datetime


def make_pdf(lines: list[str], *pages: list[str]) -> bytes:
    """A PDF of ``lines``, and of each further list of lines on a page of its own."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for page in (lines, *pages):
        pdf.add_page()
        for line in page:
            pdf.cell(0, 8, line, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def mail(
    body: str = "Hello there.",
    *,
    subject: str = "Hello",
    msgid: str | None = "m1@test.example",
    sender: str = "Alice Martin <Alice@Acme.example>",
    to: str = "bob@acme.example",
    cc: str | None = None,
    in_reply_to: str | None = None,
    references: str | None = None,
    date: datetime | None = datetime(2024, 3, 12, 9, 30, tzinfo=UTC),
    headers: dict[str, str] | None = None,
    html: str | None = None,
) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    if cc:
        msg["Cc"] = cc
    msg["Subject"] = subject
    if date is not None:
        msg["Date"] = format_datetime(date)
    if msgid:
        msg["Message-ID"] = f"<{msgid}>"
    if in_reply_to:
        msg["In-Reply-To"] = f"<{in_reply_to}>"
    if references:
        msg["References"] = references
    for k, v in (headers or {}).items():
        msg[k] = v
    if body is not None:
        msg.set_content(body)
    if html is not None:
        if body is None:
            msg.set_content(html, subtype="html")
        else:
            msg.add_alternative(html, subtype="html")
    return msg


def raw(msg: EmailMessage) -> bytes:
    return msg.as_bytes(policy=policy.default)
