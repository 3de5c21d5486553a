"""The inspector's excerpts in their source: taken at the stored offsets, never guessed."""

from __future__ import annotations

from pmsearch.services.gateway.inspector.service import source_contexts
from pmsearch.shared.messages import (
    Answer,
    AnswerSentence,
    Citation,
    EvidenceAttachment,
    EvidenceMessage,
    Excerpt,
    RunResult,
)

BODY = "Hello Anna,\n\nthe insurer accepted the claim on 3 May after the photos arrived.\n\nBest, Sabine"


def message(body: str = BODY, attachments: list[EvidenceAttachment] | None = None) -> EvidenceMessage:
    return EvidenceMessage(
        message_id="m1", tenant_id="acme", thread_id="t1", mailbox="alice", sender="Sabine <s@example.com>",
        date=None, subject="Re: claim", body=body, attachments=attachments or [],
    )


def result_citing(text: str, start: int, part: str = "body") -> RunResult:
    excerpt = Excerpt(text=text, part=part, start=start, end=start + len(text), matched_quote=True)
    sentence = AnswerSentence(text="The claim was accepted.", citations=[Citation(message_id="m1", excerpt=excerpt)])
    answered = Answer(text=sentence.text, sentences=[sentence])
    return RunResult(run_id="r1", tenant_id="acme", outcome="answered", answer=answered)


def test_excerpt_is_shown_between_the_source_text_around_it():
    quote = "the insurer accepted the claim"
    [ctx] = source_contexts(result_citing(quote, BODY.index(quote)), {"m1": message()})
    assert ctx.kept and ctx.before + ctx.text + ctx.after == BODY
    assert ctx.before == "Hello Anna,\n\n" and not ctx.clipped_start and not ctx.clipped_end


def test_context_is_cut_to_the_width_on_each_side_and_says_so():
    quote = "the insurer accepted the claim"
    [ctx] = source_contexts(result_citing(quote, BODY.index(quote)), {"m1": message()}, width=5)
    assert (ctx.before, ctx.after) == ("na,\n\n", " on 3")
    assert ctx.clipped_start and ctx.clipped_end


def test_excerpt_from_an_attachment_is_placed_in_that_attachments_text():
    pdf = "Invoice INV-7: total 120 EUR, due 1 June."
    quote = "total 120 EUR"
    msg = message(attachments=[EvidenceAttachment(name="inv.pdf", text=pdf)])
    [ctx] = source_contexts(result_citing(quote, pdf.index(quote), part="attachment:inv.pdf"), {"m1": msg})
    assert ctx.kept and ctx.before == "Invoice INV-7: " and ctx.after == ", due 1 June."


def test_expired_evidence_leaves_the_excerpt_alone():
    [ctx] = source_contexts(result_citing("the insurer accepted", 13), {})
    assert not ctx.kept and ctx.text == "the insurer accepted" and ctx.before == ctx.after == ""


def test_offsets_that_no_longer_hold_the_excerpt_are_not_trusted():
    [ctx] = source_contexts(result_citing("the insurer accepted", 0), {"m1": message()})
    assert not ctx.kept and ctx.before == ""
