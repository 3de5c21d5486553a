"""Evidence and requests for the verifier's tests."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from pmsearch.shared.messages import (
    Draft,
    DraftSentence,
    EvidenceAttachment,
    EvidenceMessage,
    RunMeta,
    VerificationRequested,
)

TENANT = "t-acme"
# Every draft of a run carries the run's one deadline, as the gateway recorded it.
DEADLINE = time.time() + 3600
OTHER_TENANT = "t-other"

M1 = "m3f9a2c1b0d4e"  # the insurer accepts the claim
M2 = "m0a1b2c3d4e5f"  # the customer sends photos (with an attachment)
M3 = "m111111111111"  # typographic quotes, soft hyphen, no-break space, entities
M4 = "m222222222222"  # Chinese
M5 = "m333333333333"  # the insurer settles the claim: amounts, dates, codes, addresses
M6 = "m444444444444"  # a streaming service's receipt (nothing about the claim)
FOREIGN = "m999999999999"  # another tenant's message, in another run's evidence
NEVER = "mabcdefabcdef"  # never retrieved by anyone

M1_BODY = (
    "Dear Mr. Meier,\n\n"
    "we have received the photos of your Golf and the claim is\n"
    "accepted. The repair costs of €1,200.50 will be paid by 5 December 2025.\n\n"
    "Kind regards,\nAnna Schmidt\nClaims department, Example Insurance Inc.\n"
    "anna.schmidt@insurer.example | https://insurer.example/claims/42\n\n"
    "P.S. As I told you on the phone at 10:30 a.m. today: all is settled."
)
M2_BODY = (
    "Hi Anna,\nattached are the photos of the damaged bumper. The delay so far is "
    "unacceptable to me. The photos are not blurry and the other drivers' cars were fine. "
    "Let me know if you need anything else.\nBest, Tom"
)
M2_ATTACHMENT = "Photo 1: front bumper, left side. Photo 2: headlight."
M3_BODY = (
    "The adjuster said: \u201cWe\u2019ll send the pay\u00adment today \u2014 as agreed.\u201d"
    "\u00a0Thanks &amp; regards,\u00a0the\u200b team"
)
M4_BODY = "保险公司已经接受了索赔。照片已收到。"
M5_BODY = (
    "Dear Mr. Meier,\n\n"
    "your claim CLM-2024-55817 for the Golf (M-AC 4821) is settled. We will transfer\n"
    "EUR 2,115.50 for invoice INV-2024-0173 of the workshop dated 3 April 2024; the\n"
    "garage expects you at 10:00. 94.1% of the costs are covered, and 3 photos were\n"
    "enough. Questions: claims@insurer.example or https://insurer.example/claims/55817\n\n"
    "Anna Schmidt"
)
M6_BODY = (
    "Your receipt for March\n\n"
    "Thanks for being a StreamFlix member. Plan: Premium. Amount charged: EUR 12.99 on\n"
    "1 March 2024. Next billing date: 1 April 2024."
)


def message(
    message_id: str,
    body: str,
    *,
    tenant: str = TENANT,
    subject: str = "Re: Golf claim",
    attachments: dict[str, str] | None = None,
    date: datetime | None = None,
    sender: str = "anna@insurer.example",
) -> EvidenceMessage:
    return EvidenceMessage(
        message_id=message_id,
        tenant_id=tenant,
        thread_id="th-golf",
        mailbox="inbox@acme.example",
        sender=sender,
        date=date or datetime(2025, 11, 29, 10, 30, tzinfo=UTC),
        subject=subject,
        body=body,
        attachments=[EvidenceAttachment(name=k, text=v) for k, v in (attachments or {}).items()],
    )


def evidence() -> dict[str, EvidenceMessage]:
    """This run's evidence (the foreign message is deliberately not in it)."""
    msgs = [
        message(M1, M1_BODY, subject="Your Golf claim 4711"),
        message(M2, M2_BODY, subject="Photos", attachments={"photos.txt": M2_ATTACHMENT}),
        message(M3, M3_BODY, subject="Payment"),
        message(M4, M4_BODY, subject="索赔"),
        message(M5, M5_BODY, subject="Settlement of your claim"),
        message(M6, M6_BODY, subject="Your receipt for March", sender="receipts@streamflix.example"),
    ]
    return {m.message_id: m for m in msgs}


def foreign_message() -> EvidenceMessage:
    return message(FOREIGN, "the claim is accepted", tenant=OTHER_TENANT)


def request(
    *,
    run_id: str = "run-1",
    ending: str = "answer",
    text: str | None = None,
    sentences: list[DraftSentence] | None = None,
    **extra,
) -> VerificationRequested:
    draft = Draft(text=text, sentences=sentences) if (text is not None or sentences is not None) else None
    return VerificationRequested(
        run_id=run_id,
        tenant_id=TENANT,
        scope_token="scope",
        deadline=DEADLINE,
        question="Did the insurer accept the Golf claim?",
        ending=ending,
        draft=draft,
        **extra,
    )


def run_record(req: VerificationRequested) -> RunMeta:
    """The gateway's record of ``req``'s run, which the verifier holds drafts against."""
    return RunMeta(
        run_id=req.run_id, tenant_id=req.tenant_id, principal="alice", question=req.question,
        scope_token=req.scope_token, created_at=req.deadline - 60, deadline=req.deadline, max_steps=4,
        mailboxes=["inbox@acme.example"],
    )
