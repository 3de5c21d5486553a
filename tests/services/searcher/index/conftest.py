"""Shared fixtures for the index contract suite: the real embedder, loaded once, and a
small corpus of mail across two tenants, embedded once per module."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pmsearch.services.searcher.embedding import OnnxEmbedder
from pmsearch.services.searcher.index.base import Chunk, ChunkPayload

DIM = 384
ACME, BETA = "acme", "beta"


def _ts(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC)


# (key, tenant, mailbox, thread, sender, recipients, day, subject, text, extras)
MAIL = [
    ("inv", ACME, "main", "t-inv", "billing@vendor.example", ["ann@acme.example"], "2024-03-05",
     "Invoice for March", "Please find attached invoice INV-2024-0173 for the March consulting work.",
     {"has_attachments": True, "attachment_names": ["INV-2024-0173.pdf"]}),
    ("inv-pdf", ACME, "main", "t-inv", "billing@vendor.example", ["ann@acme.example"], "2024-03-05",
     "Invoice for March", "Invoice number INV-2024-0173. Amount due 4,200 EUR within 30 days.",
     {"has_attachments": True, "attachment_names": ["INV-2024-0173.pdf"], "kind": "attachment",
      "attachment_name": "INV-2024-0173.pdf", "same_message_as": "inv"}),
    ("inv-reply", ACME, "main", "t-inv", "ann@acme.example", ["billing@vendor.example"], "2024-03-07",
     "Re: Invoice for March", "Thanks, I forwarded it to accounts payable for approval.", {}),
    ("inv-feb", ACME, "main", "t-feb", "billing@vendor.example", ["ann@acme.example"], "2024-02-03",
     "Invoice for February", "Reminder: invoice INV-2024-0174 for February is now overdue.", {}),
    ("inv-2023", ACME, "main", "t-old", "billing@vendor.example", ["ann@acme.example"], "2023-12-01",
     "Year-end invoicing", "From 2024 all invoices will be sent as PDF attachments only.", {}),
    ("claim", ACME, "main", "t-claim", "agent@insurer.example", ["bob@acme.example"], "2024-04-10",
     "Your claim", "Good news: the insurer approved the claim for the vehicle collision; payment follows.", {}),
    ("lunch", ACME, "main", "t-lunch", "carol@acme.example", ["ann@acme.example", "bob@acme.example"],
     "2024-04-12", "Lunch friday?", "Shall we try the new ramen place on friday at noon?", {}),
    ("budget", ACME, "main", "t-budget", "dave@acme.example", ["ann@acme.example"], "2024-01-20",
     "Q1 budget review", "The quarterly budget review moves to Thursday; bring the headcount plan.", {}),
    ("outage", ACME, "main", "t-outage", "ops@acme.example", ["all@acme.example"], "2024-02-28",
     "Server outage", "The mail server will be down for maintenance on Saturday night.", {"folder": "Ops"}),
    ("shared-inv", ACME, "shared", "t-shared", "billing@vendor.example", ["team@acme.example"],
     "2024-03-06", "Invoice copy", "Copy of invoice INV-2024-0173 for the shared finance mailbox.", {}),
    ("quarantined", ACME, "main", "t-q", "scam@bad.example", ["ann@acme.example"], "2024-03-05",
     "URGENT invoice INV-2024-0173", "Pay invoice INV-2024-0173 now: the insurer approved the claim for "
     "the vehicle collision.", {"quarantined": True, "folder": "Junk", "has_attachments": True}),
    ("beta-inv", BETA, "main", "t-beta", "billing@vendor.example", ["eve@beta.example"], "2024-03-05",
     "Invoice for March", "Please find attached invoice INV-2024-0173 for the March consulting work.",
     {"has_attachments": True}),
    ("beta-claim", BETA, "main", "t-beta2", "agent@insurer.example", ["eve@beta.example"], "2024-04-10",
     "Your claim", "Good news: the insurer approved the claim for the vehicle collision; payment follows.", {}),
]


def build_chunks(embedder: OnnxEmbedder) -> list[Chunk]:
    vectors = embedder.embed([m[8] for m in MAIL])
    chunks = []
    for (key, tenant, mailbox, thread, sender, rcpts, day, subject, text, extras), vec in zip(MAIL, vectors):
        extras = dict(extras)
        msg = extras.pop("same_message_as", key)
        date = _ts(day)
        payload = ChunkPayload(
            tenant_id=tenant,
            mailbox=mailbox,
            message_id=f"m-{msg}",
            rfc_message_id=f"<{msg}@mail.example>",
            thread_id=thread,
            subject=subject,
            normalized_subject=subject.lower().removeprefix("re: "),
            sender=f"{sender.split('@')[0].title()} <{sender}>",
            sender_email=sender,
            recipients=rcpts,
            date=date,
            date_ts=date.timestamp(),
            text=text,
            **extras,
        )
        chunks.append(Chunk(payload=payload, dense=vec))
    return chunks


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    emb = OnnxEmbedder()
    emb.embed(["warm up"])
    return emb


@pytest.fixture(scope="module")
def corpus(embedder: OnnxEmbedder) -> list[Chunk]:
    return build_chunks(embedder)
