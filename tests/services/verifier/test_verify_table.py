"""The verification rules, case by case: every rule with passing and failing drafts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import get_args

import pytest

from pmsearch.services.verifier.rules import REASON_OF, RULES
from pmsearch.services.verifier.service import ANSWER_REASONS, RETIRED_REASONS, verify
from pmsearch.shared.messages import Draft, DraftSentence, EvidenceMessage, RemovalReason
from tests.services.verifier.factory import FOREIGN, M1, M2, M3, M4, M5, M6, NEVER, evidence, message
from tests.services.verifier.test_corrections import FIRST, RESENT

ANY = object()


@dataclass
class Case:
    draft: Draft
    kept: list[str] = field(default_factory=list)  # kept sentence texts, in order
    removed: list[tuple[str, object]] = field(default_factory=list)  # (reason, offending)
    # message_id -> (matched_quote, excerpt text or ANY, part) for the first kept sentence
    excerpts: dict[str, tuple[bool, object, str]] | None = None
    question: str = ""
    sources: dict[str, EvidenceMessage] | None = None  # the run's evidence, when not the factory's


def text(t: str) -> Draft:
    return Draft(text=t)


def items(*pairs: tuple[str, list[str]]) -> Draft:
    return Draft(sentences=[DraftSentence(text=t, citations=c) for t, c in pairs])


# A reply that answers in its own words under the thread's subject, and a message about
# another matter whose other sentences share the question's everyday words.
BOILERS = message("mb0b0b0b0b0b0", "Thanks, order placed today, delivery expected in mid-June.", subject="Re: two new boilers")
INVOICE = message(
    "mc1c1c1c1c1c1",
    "The new pallets arrived late again.\n\nPlease settle invoice 5521 by the end of next week.",
    subject="Invoice 5521",
    sender="billing@supplier.example",
).model_copy(update={"thread_id": "th-invoice"})
BOILER_SOURCES = {m.message_id: m for m in (BOILERS, INVOICE)}

CASES: dict[str, Case] = {
    # ---------------------------------------------------------------- citations
    "cited claim is kept": Case(
        text(f"The insurer accepted the claim [{M1}]."), kept=["The insurer accepted the claim."]
    ),
    "uncited claim is removed": Case(
        text("The insurer accepted the claim."), removed=[("no_citation", None)]
    ),
    "citation never retrieved": Case(
        text(f"The insurer accepted the claim [{NEVER}]."), removed=[("unknown_citation", NEVER)]
    ),
    "one known one unknown citation": Case(
        text(f"The insurer accepted the claim [{M1}, {NEVER}]."),
        removed=[("unknown_citation", NEVER)],
    ),
    "another tenant's message": Case(
        text(f"The insurer accepted the claim [{FOREIGN}]."),
        removed=[("unknown_citation", FOREIGN)],
    ),
    "marker mid-sentence": Case(
        text(f"The insurer [{M1}] accepted the claim."), kept=["The insurer accepted the claim."]
    ),
    "marker after the full stop": Case(
        text(f"The insurer accepted the claim. [{M1}]"), kept=["The insurer accepted the claim."]
    ),
    "marker after the full stop, no space": Case(
        text(f"The insurer accepted the claim.[{M1}] It will pay [{M1}]."),
        kept=["The insurer accepted the claim.", "It will pay."],
    ),
    "marker after stop binds backwards only": Case(
        text(f"The claim was accepted. [{M1}] Payment follows soon."),
        kept=["The claim was accepted."],
        removed=[("no_citation", None)],
    ),
    "marker on its own line after a paragraph": Case(
        text(f"The claim was accepted.\n\n[{M1}]"), kept=["The claim was accepted."]
    ),
    "comma separated ids": Case(
        text(f"Photos were sent and the claim accepted [{M1}, {M2}]."),
        kept=["Photos were sent and the claim accepted."],
        excerpts={M1: (False, ANY, "body"), M2: (False, ANY, "body")},
    ),
    "semicolon separated ids": Case(
        text(f"Photos were sent and the claim accepted [{M1}; {M2}]."),
        kept=["Photos were sent and the claim accepted."],
    ),
    "adjacent brackets": Case(
        text(f"Photos were sent and the claim accepted [{M1}][{M2}]."),
        kept=["Photos were sent and the claim accepted."],
    ),
    "adjacent brackets with space": Case(
        text(f"Photos were sent and the claim accepted [{M1}] [{M2}]."),
        kept=["Photos were sent and the claim accepted."],
    ),
    "upper-case canonical id": Case(
        text(f"The claim was accepted [{M1.upper()}]."), kept=["The claim was accepted."]
    ),
    "prose in brackets is not a citation": Case(
        text("The claim was accepted [sic]."), removed=[("no_citation", None)]
    ),
    "markdown link is not a citation": Case(
        text(f"The claim was accepted [{M1}](https://example.com)."),
        removed=[("no_citation", None)],
    ),
    "footnote number is an unknown id": Case(
        text("The claim was accepted [1]."), removed=[("unknown_citation", "1")]
    ),
    "bare id without brackets is no citation": Case(
        text(f"The claim was accepted per {M1}."), removed=[("no_citation", None)]
    ),
    "only a marker": Case(text(f"[{M1}]"), removed=[("empty_sentence", None)]),
    "only punctuation": Case(text("…"), removed=[("empty_sentence", None)]),
    # ---------------------------------------------------------------- structured drafts
    "structured sentence with citation": Case(
        items(("The claim was accepted.", [M1])), kept=["The claim was accepted."]
    ),
    "structured sentence without citation": Case(
        items(("The claim was accepted.", [])), removed=[("no_citation", None)]
    ),
    "structured unknown citation": Case(
        items(("The claim was accepted.", [NEVER])), removed=[("unknown_citation", NEVER)]
    ),
    "structured malformed citation": Case(
        items(("The claim was accepted.", ["not an id!"])), removed=[("malformed", "not an id!")]
    ),
    "structured empty text": Case(items(("", [M1])), removed=[("empty_sentence", None)]),
    "structured item is re-split and inherits": Case(
        items(("The claim was accepted. It will be paid.", [M1])),
        kept=["The claim was accepted.", "It will be paid."],
    ),
    "structured plus inline unknown marker": Case(
        items((f"The claim was accepted [{NEVER}].", [M1])),
        removed=[("unknown_citation", NEVER)],
    ),
    "structured bracketed citation": Case(
        items(("The claim was accepted.", [f"[{M1}]"])), kept=["The claim was accepted."]
    ),
    "structured combined citation string": Case(
        items(("Photos were sent and the claim accepted.", [f"{M1}, {M2}"])),
        kept=["Photos were sent and the claim accepted."],
        excerpts={M1: (False, ANY, "body"), M2: (False, ANY, "body")},
    ),
    # ---------------------------------------------------------------- quotes
    "exact quote": Case(
        text(f'Anna wrote "the claim is accepted" [{M1}].'),
        kept=['Anna wrote "the claim is accepted".'],
        excerpts={M1: (True, "the claim is\naccepted", "body")},
    ),
    "correct id with forged quote": Case(
        text(f'Anna wrote "the claim is approved in full" [{M1}].'),
        removed=[("quote_not_found", "the claim is approved in full")],
    ),
    "quote differs by curly apostrophe": Case(
        text(f"The adjuster wrote “we'll send the payment today” [{M3}]."),
        kept=["The adjuster wrote “we'll send the payment today”."],
        excerpts={M3: (True, "We’ll send the pay\u00adment today", "body")},
    ),
    "quote differs by case": Case(
        text(f'Anna wrote "THE CLAIM IS ACCEPTED" [{M1}].'), kept=['Anna wrote "THE CLAIM IS ACCEPTED".']
    ),
    "quote with no-break space": Case(
        text(f'Anna wrote "the claim\u00a0is accepted" [{M1}].'), kept=[ANY]
    ),
    "quote across a soft hyphen in the source": Case(
        text(f'The adjuster promised "the payment today" [{M3}].'), kept=[ANY]
    ),
    "quote with a soft hyphen of its own": Case(
        text(f'Anna wrote "the claim is ac\u00adcepted" [{M1}].'), kept=[ANY]
    ),
    "quote across a line wrap in the source": Case(
        text(f'Anna wrote "claim is accepted" [{M1}].'),
        kept=[ANY],
        excerpts={M1: (True, "claim is\naccepted", "body")},
    ),
    "quote wrapped in the draft": Case(
        text(f'Anna wrote "the claim\nis accepted" [{M1}].'), kept=[ANY]
    ),
    "quote with zero-width space": Case(
        text(f'Anna wrote "the claim is\u200b accepted" [{M1}].'), kept=[ANY]
    ),
    "quote with full-width letters": Case(
        text(f'Anna mentioned "the photos of your Ｇｏｌｆ" [{M1}].'), kept=[ANY]
    ),
    "quote against an html entity": Case(
        text(f'They signed "Thanks & regards" [{M3}].'),
        kept=[ANY],
        excerpts={M3: (True, "Thanks &amp; regards", "body")},
    ),
    "quote with a different dash": Case(
        text(f'They wrote "today - as agreed" [{M3}].'), kept=[ANY]
    ),
    "quote differing by one word": Case(
        text(f'Anna wrote "the claim is rejected" [{M1}].'),
        removed=[("quote_not_found", "the claim is rejected")],
    ),
    "quote differing by one amount": Case(
        text(f'The costs are "€1,300.50" [{M1}].'), removed=[("quote_not_found", "€1,300.50")]
    ),
    "quote of an amount": Case(text(f'The costs are "€1,200.50" [{M1}].'), kept=[ANY]),
    "quote borrowing part of a word": Case(
        text(f'Tom called the delay "acceptable" [{M2}].'),
        removed=[("quote_not_found", "acceptable")],
    ),
    "quote with elision": Case(
        text(f'Anna wrote "we have received … the claim is accepted" [{M1}].'),
        kept=[ANY],
        excerpts={M1: (True, "we have received the photos of your Golf and the claim is\naccepted", "body")},
    ),
    "quote with elision out of order": Case(
        text(f'Anna wrote "the claim is accepted ... we have received" [{M1}].'),
        removed=[("quote_not_found", "the claim is accepted ... we have received")],
    ),
    "two citations, one holds the quote": Case(
        text(f'Anna wrote "the claim is accepted" [{M2}, {M1}].'),
        kept=[ANY],
        excerpts={M2: (False, ANY, "body"), M1: (True, "the claim is\naccepted", "body")},
    ),
    "two quotes in two sources": Case(
        text(f'Tom sent "the photos of the damaged bumper" and Anna wrote "the claim is accepted" [{M1}, {M2}].'),
        kept=[ANY],
        excerpts={M1: (True, "the claim is\naccepted", "body"), M2: (True, ANY, "body")},
    ),
    "two quotes, one forged": Case(
        text(f'Anna wrote "the claim is accepted" and "payment is due today" [{M1}].'),
        removed=[("quote_not_found", "payment is due today")],
    ),
    "quote only in an uncited source": Case(
        text(f'Tom wrote "the damaged bumper" [{M1}].'), removed=[("quote_not_found", "the damaged bumper")]
    ),
    "quote found in an attachment": Case(
        text(f'The attachment lists "front bumper, left side" [{M2}].'),
        kept=[ANY],
        excerpts={M2: (True, "front bumper, left side", "attachment:photos.txt")},
    ),
    "quote found in the subject": Case(
        text(f'The subject was "Your Golf claim 4711" [{M1}].'),
        kept=[ANY],
        excerpts={M1: (True, "Your Golf claim 4711", "subject")},
    ),
    "typographic single quotes checked": Case(
        text(f"Anna wrote ‘the claim is rejected’ [{M1}]."),
        removed=[("quote_not_found", "the claim is rejected")],
    ),
    "straight single quotes of two words checked": Case(
        text(f"Anna wrote 'claim rejected' [{M1}]."), removed=[("quote_not_found", "claim rejected")]
    ),
    "apostrophes are not quotes": Case(
        text(f"Tom's photos weren't blurry and the drivers' cars were fine [{M2}]."), kept=[ANY]
    ),
    "unclosed double quote still checked": Case(
        text(f'Anna wrote "the claim is rejected [{M1}].'),
        removed=[("quote_not_found", "the claim is rejected.")],
    ),
    "empty quotes are ignored": Case(text(f'Anna wrote "" about it [{M1}].'), kept=[ANY]),
    "guillemets": Case(text(f"Anna wrote «the claim is accepted» [{M1}]."), kept=[ANY]),
    "german quotes": Case(text(f"Anna schrieb „the claim is accepted“ [{M1}]."), kept=[ANY]),
    "terminal punctuation inside the quote": Case(
        text(f"Anna mentioned “the photos of your Golf.” [{M1}]"), kept=[ANY]
    ),
    "quote ends the sentence": Case(
        text(f'Anna wrote "the claim is accepted." [{M1}] Tom replied [{M2}].'),
        kept=['Anna wrote "the claim is accepted."', "Tom replied."],
    ),
    "quote holding two sentences stays whole": Case(
        text(f'The list reads "Photo 1: front bumper, left side. Photo 2: headlight." [{M2}]'),
        kept=['The list reads "Photo 1: front bumper, left side. Photo 2: headlight."'],
    ),
    "forged quote holding two sentences": Case(
        text(f'The list reads "Photo 1: front bumper. Photo 2: windscreen." [{M2}]'),
        removed=[("quote_not_found", "Photo 1: front bumper. Photo 2: windscreen.")],
    ),
    "chinese quote without word spaces": Case(
        text(f"保险公司说「接受了索赔」[{M4}]。"), kept=[ANY]
    ),
    # ---------------------------------------------------------------- figures
    "amount as in the source": Case(
        text(f"The insurer will transfer EUR 2,115.50 [{M5}]."), kept=[ANY]
    ),
    "amount differing from the source": Case(
        text(f"The insurer will transfer EUR 2,115.60 [{M5}]."),
        removed=[("figure_not_found", "2,115.60")],
    ),
    "amount without thousands separator": Case(
        text(f"The insurer will transfer EUR 2115.50 [{M5}]."), kept=[ANY]
    ),
    "amount in continental format": Case(
        text(f"The insurer will transfer €2.115,50 [{M5}]."), kept=[ANY]
    ),
    "amount with the code after it": Case(
        text(f"The insurer will transfer 2,115.50 EUR [{M5}]."), kept=[ANY]
    ),
    "amount with a thin space as thousands separator": Case(
        text(f"The insurer will transfer EUR 2\u2009115,50 [{M5}]."), kept=[ANY]
    ),
    "amount in another currency": Case(
        text(f"The insurer will transfer $2,115.50 [{M5}]."), removed=[("figure_not_found", ANY)]
    ),
    "amount at another scale": Case(
        text(f"The insurer will transfer EUR 2,115.50 million [{M5}]."), removed=[("figure_not_found", ANY)]
    ),
    "amount off by a factor": Case(
        text(f"The insurer will transfer EUR 21,155.00 [{M5}]."),
        removed=[("figure_not_found", "21,155.00")],
    ),
    "amount with trailing zeros": Case(
        text(f"The repair costs of €1,200.5 will be paid [{M1}]."), kept=[ANY]
    ),
    "amount from the wrong message": Case(
        text(f"The insurer charged EUR 12.99 for the claim [{M5}]."),
        removed=[("figure_not_found", "12.99")],
    ),
    "amount from the second cited message": Case(
        text(f"The insurer will transfer EUR 2,115.50 and StreamFlix charged EUR 12.99 [{M5}, {M6}]."),
        kept=[ANY],
    ),
    "percentage as in the source": Case(
        text(f"The insurer covers 94.1% of the costs [{M5}]."), kept=[ANY]
    ),
    "percentage differing": Case(
        text(f"The insurer covers 94.7% of the costs [{M5}]."), removed=[("figure_not_found", "94.7")]
    ),
    "small count in digits is checked": Case(
        text(f"The insurer says 4 photos were enough [{M5}]."), removed=[("figure_not_found", "4")]
    ),
    "small count as in the source": Case(
        text(f"The insurer says 3 photos were enough [{M5}]."), kept=[ANY]
    ),
    "count written as a word is no figure": Case(
        text(f"The insurer says three photos were enough [{M5}]."), kept=[ANY]
    ),
    "date as in the source": Case(
        text(f"The workshop invoice is dated 3 April 2024 [{M5}]."), kept=[ANY]
    ),
    "date without its year": Case(
        text(f"The workshop invoice is dated April 3 [{M5}]."), kept=[ANY]
    ),
    "date in ISO format": Case(
        text(f"The workshop invoice is dated 2024-04-03 [{M5}]."), kept=[ANY]
    ),
    "date in dotted format": Case(
        text(f"The workshop invoice is dated 03.04.2024 [{M5}]."), kept=[ANY]
    ),
    "date with slashes either way round": Case(
        text(f"The workshop invoice is dated 4/3/2024 [{M5}]."), kept=[ANY]
    ),
    "ordinal date": Case(
        text(f"The workshop invoice is dated the 3rd of April [{M5}]."), kept=[ANY]
    ),
    "date with weekday": Case(
        text(f"The workshop invoice is dated Wednesday, April 3, 2024 [{M5}]."), kept=[ANY]
    ),
    "wrong day": Case(
        text(f"The workshop invoice is dated 4 April 2024 [{M5}]."),
        removed=[("figure_not_found", "4 April 2024")],
    ),
    "wrong year": Case(
        text(f"The workshop invoice is dated April 3, 2023 [{M5}]."),
        removed=[("figure_not_found", "April 3, 2023")],
    ),
    "wrong month in ISO format": Case(
        text(f"The workshop invoice is dated 2024-05-03 [{M5}]."),
        removed=[("figure_not_found", "2024-05-03")],
    ),
    "the message's own date": Case(
        text(f"Anna accepted the claim on 29 November 2025 [{M1}]."), kept=[ANY]
    ),
    "time as in the source": Case(
        text(f"The garage expects him at 10:00 [{M5}]."), kept=[ANY]
    ),
    "time as am": Case(text(f"The garage expects him at 10am [{M5}]."), kept=[ANY]),
    "time as a.m. with a space": Case(
        text(f"The garage expects him at 10 a.m. on the day [{M5}]."), kept=[ANY]
    ),
    "time in the afternoon instead": Case(
        text(f"The garage expects him at 10 pm [{M5}]."), removed=[("figure_not_found", "10 pm")]
    ),
    "wrong time": Case(
        text(f"The garage expects him at 11:30 [{M5}]."), removed=[("figure_not_found", "11:30")]
    ),
    "invoice number as in the source": Case(
        text(f"The workshop invoice is INV-2024-0173 [{M5}]."), kept=[ANY]
    ),
    "invoice number in lower case": Case(
        text(f"The workshop invoice is inv-2024-0173 [{M5}]."), kept=[ANY]
    ),
    "wrong invoice number": Case(
        text(f"The workshop invoice is INV-2024-0158 [{M5}]."),
        removed=[("figure_not_found", "INV-2024-0158")],
    ),
    "claim number by its last group": Case(
        text(f"The claim 55817 is settled [{M5}]."), kept=[ANY]
    ),
    "wrong claim number": Case(
        text(f"The claim CLM-2024-55871 is settled [{M5}]."),
        removed=[("figure_not_found", "CLM-2024-55871")],
    ),
    "number plate as in the source": Case(
        text(f"The Golf M-AC 4821 is settled [{M5}]."), kept=[ANY]
    ),
    "wrong number plate": Case(
        text(f"The Golf M-AC 4812 is settled [{M5}]."), removed=[("figure_not_found", "M-AC 4812")]
    ),
    "e-mail address as in the source": Case(
        text(f"Questions go to claims@insurer.example [{M5}]."), kept=[ANY]
    ),
    "e-mail address not in the source": Case(
        text(f"Questions go to support@insurer.example [{M5}]."),
        removed=[("figure_not_found", "support@insurer.example")],
    ),
    "e-mail address of the sender": Case(
        text(f"The claim was accepted by anna@insurer.example [{M1}]."), kept=[ANY]
    ),
    "url without scheme and with trailing slash": Case(
        text(f"The claim is online at insurer.example/claims/55817/ [{M5}]."), kept=[ANY]
    ),
    "url with a different path": Case(
        text(f"The claim is online at https://insurer.example/claims/55818 [{M5}]."),
        removed=[("figure_not_found", "https://insurer.example/claims/55818")],
    ),
    "first failing figure is reported": Case(
        text(f"The insurer will transfer EUR 2,115.50 on 5 April 2024 at 10:00 [{M5}]."),
        removed=[("figure_not_found", "5 April 2024")],
    ),
    "quote check comes before the figures": Case(
        text(f'The insurer wrote "EUR 2,115.60" [{M5}].'), removed=[("quote_not_found", "EUR 2,115.60")]
    ),
    # ---------------------------------------------------------------- unsupported content
    "invented claim riding on a real quote": Case(
        text(f'The email looks good and the insurer accepted everything: "Your receipt for March". [{M6}]'),
        removed=[("unsupported_claim", "looks good insurer accepted everything")],
    ),
    "invented claim without a quote": Case(
        text(f"The insurer suspects fraud and refuses any payment [{M1}]."),
        removed=[("unsupported_claim", ANY)],
    ),
    "honest paraphrase survives": Case(
        text(f"The insurer settled the Golf claim and transfers EUR 2115.50 for the workshop invoice [{M5}]."),
        kept=[ANY],
    ),
    "honest paraphrase with stemmed words": Case(
        text(f"Tom attaches photos showing the bumper damage [{M2}]."), kept=[ANY]
    ),
    "honest quote with attribution": Case(
        text(f'StreamFlix sent a receipt saying "Amount charged: EUR 12.99" [{M6}].'), kept=[ANY]
    ),
    "generic answer words do not count": Case(
        text(f"Yes, according to her email message, Anna stated the claim was accepted [{M1}]."),
        kept=[ANY],
    ),
    "the word amount only names the figure": Case(
        text(f"The workshop transfer amount is EUR 2,115.50 [{M5}]."),
        kept=[ANY],
    ),
    "an amount's other words are still checked": Case(
        text(f"The insurer refused the transfer amount of EUR 2,115.50 [{M5}]."),
        removed=[("unsupported_claim", "refused")],
    ),
    "too few content words to judge": Case(text(f"It looks fine [{M1}]."), kept=[ANY]),
    "content words of two cited messages": Case(
        text(f"Tom sent bumper photos and the insurer accepted the claim [{M1}, {M2}]."), kept=[ANY]
    ),
    "content only in an uncited message": Case(
        text(f"Tom sent bumper photos, unacceptable delay [{M6}]."),
        removed=[("unsupported_claim", ANY)],
    ),
    # ---------------------------------------------------------------- whole drafts
    "mixed draft": Case(
        text(f"The claim was accepted [{M1}]. It was a sunny day. Payment is late [{NEVER}]."),
        kept=["The claim was accepted."],
        removed=[("no_citation", None), ("unknown_citation", NEVER)],
    ),
    "every sentence removed": Case(
        text(f'It was accepted. Anna wrote "the claim is rejected" [{M1}].'),
        removed=[("no_citation", None), ("quote_not_found", "the claim is rejected")],
    ),
    "empty draft": Case(text("")),
    "whitespace draft": Case(text(" \n\t ")),
    "no draft text at all": Case(Draft()),
    "bullet list items each verified": Case(
        text(f"Findings:\n- The claim was accepted [{M1}].\n- Photos were sent [{M2}].\n- Nothing else."),
        kept=["Findings:", "The claim was accepted.", "Photos were sent."][1:],
        removed=[("no_citation", None), ("no_citation", None)],
    ),
    "numbered list items": Case(
        text(f"1. The claim was accepted [{M1}]\n2. Photos were sent [{M2}]"),
        kept=["The claim was accepted", "Photos were sent"],
    ),
    "abbreviations and times stay in one sentence": Case(
        text(f"Mr. Meier was told at 10:30 a.m. that the claim is accepted [{M1}]."),
        kept=["Mr. Meier was told at 10:30 a.m. that the claim is accepted."],
    ),
    # ---------------------------------------------------------------- details added by code
    "a detail stays with the answer it completes": Case(
        Draft(sentences=[
            DraftSentence(text="The claim was accepted.", citations=[M1]),
            DraftSentence(text='Anna Schmidt: "The repair costs of €1,200.50 will be paid by 5 December 2025."',
                          citations=[M1], completes=0),
        ]),
        kept=["The claim was accepted.",
              'Anna Schmidt: "The repair costs of €1,200.50 will be paid by 5 December 2025."'],
    ),
    "a detail goes with the answer it completes": Case(
        Draft(sentences=[
            DraftSentence(text="The claim was accepted.", citations=[NEVER]),
            DraftSentence(text='Anna Schmidt: "The repair costs of €1,200.50 will be paid by 5 December 2025."',
                          citations=[M1], completes=0),
        ]),
        removed=[("unknown_citation", NEVER), ("answer_removed", None)],
    ),
    "a detail that names no earlier sentence is malformed": Case(
        Draft(sentences=[
            DraftSentence(text="The claim was accepted.", citations=[M1], completes=0),
            DraftSentence(text='Anna Schmidt: "The repair costs of €1,200.50 will be paid by 5 December 2025."',
                          citations=[M1], completes=7),
        ]),
        removed=[("malformed", "completes=0"), ("malformed", "completes=7")],
    ),
    "a sentence a page long is malformed": Case(
        items(("The claim was accepted " + "and accepted " * 200 + ".", [M1])),
        removed=[("malformed", ANY)],
    ),
    "the excerpt is the source sentence that carries the answer": Case(
        items(("The repair costs will be paid by 5 December 2025.", [M1])),
        kept=[ANY],
        excerpts={M1: (False, "The repair costs of €1,200.50 will be paid by 5 December 2025.", "body")},
    ),
    # ---------------------------------------------------------------- the question
    "a sentence about another invoice than the one asked about": Case(
        items(("The settlement is EUR 2,115.50.", [M5])), question="Was invoice INV-2024-0999 settled?",
        removed=[("off_question", ANY)],
    ),
    "a sentence about the invoice asked about": Case(
        items(("The settlement is EUR 2,115.50.", [M5])), question="Was invoice INV-2024-0173 settled?",
        kept=[ANY],
    ),
    "the question's subject with a fact from a message about another matter": Case(
        items(("The new boilers will arrive by the end of next week.", [INVOICE.message_id])),
        question="When will the new boilers arrive?", sources=BOILER_SOURCES,
        removed=[("off_question", "new boilers arrive")],
    ),
    "the question's subject named only by the reply's subject": Case(
        items(("The new boilers will arrive in mid-June.", [BOILERS.message_id])),
        question="When will the new boilers arrive?", sources=BOILER_SOURCES, kept=[ANY],
    ),
    "an answer without the asked amount": Case(
        items(("The claim is accepted.", [M1])), question="How much will the repair get paid?",
        removed=[("asked_figure_missing", "an amount")],
    ),
    "an answer with the asked amount": Case(
        items(("The repair costs of €1,200.50 will be paid.", [M1])), question="How much will the repair get paid?",
        kept=[ANY],
    ),
    "a yes/no answer that says both yes and no": Case(
        items(("Yes, the claim is accepted.", [M1]), ("No, the claim is not settled.", [M1])),
        question="Did the insurer accept the Golf claim?",
        removed=[("contradictory", None), ("contradictory", None)],
    ),
    "a yes/no answer that says yes twice": Case(
        items(("Yes, the claim is accepted.", [M1]), ("Yes, the repair costs will be paid.", [M1])),
        question="Did the insurer accept the Golf claim?", kept=[ANY, ANY],
    ),
    "a yes and a no to a question that does not ask yes or no": Case(
        items(("Yes, the claim is accepted.", [M1]), ("No, the repair costs will be paid.", [M1])),
        question="What did the insurer decide about the Golf claim?", kept=[ANY, ANY],
    ),
    "a link only in a message its sender corrected": Case(
        items(("Read the issue at https://logisticsweekly.example/issues/12.", [FIRST.message_id])),
        question="Where can I read Logistics Weekly #12?", sources={m.message_id: m for m in (FIRST, RESENT)},
        removed=[("superseded", ANY)],
    ),
    "a link of the correction": Case(
        items(("Read the issue at https://logisticsweekly.example/issues/12-2024.", [RESENT.message_id])),
        question="Where can I read Logistics Weekly #12?", sources={m.message_id: m for m in (FIRST, RESENT)},
        kept=[ANY],
    ),
    "url and e-mail stay whole": Case(
        text(f"Anna (anna.schmidt@insurer.example) wrote from https://insurer.example/claims/42. [{M1}]"),
        kept=["Anna (anna.schmidt@insurer.example) wrote from https://insurer.example/claims/42."],
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_rule(case: Case) -> None:
    verdict = verify(case.draft, case.sources or evidence(), question=case.question)

    assert len(verdict.kept) == len(case.kept), verdict.model_dump()
    for got, want in zip(verdict.kept, case.kept):
        if want is not ANY:
            assert got.text == want
    got_removed = [(r.reason, r.offending) for r in verdict.removed]
    assert [r for r, _ in got_removed] == [r for r, _ in case.removed], got_removed
    for (_, got), (_, want) in zip(got_removed, case.removed):
        if want is not ANY:
            assert got == want

    if case.excerpts:
        citations = {c.message_id: c.excerpt for c in verdict.kept[0].citations}
        assert list(citations) == list(case.excerpts) or set(citations) == set(case.excerpts)
        for message_id, (matched, excerpt_text, part) in case.excerpts.items():
            excerpt = citations[message_id]
            assert excerpt.matched_quote is matched
            assert excerpt.part == part
            if excerpt_text is not ANY:
                assert excerpt.text == excerpt_text


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 60


# For each reason, a case the rule lets through (the removed rows are found by reason).
KEPT_BY = {
    "empty_sentence": "cited claim is kept",
    "malformed": "structured sentence with citation",
    "no_citation": "cited claim is kept",
    "unknown_citation": "marker mid-sentence",
    "quote_not_found": "exact quote",
    "figure_not_found": "amount as in the source",
    "unsupported_claim": "cited claim is kept",
    "off_question": "a sentence about the invoice asked about",
    "asked_figure_missing": "an answer with the asked amount",
    "answer_removed": "a detail stays with the answer it completes",
    "superseded": "a link of the correction",
    "contradictory": "a yes/no answer that says yes twice",
}


def test_every_reason_has_exactly_one_rule_and_rows_it_removes_and_keeps() -> None:
    reasons = [REASON_OF[rule] for rule in RULES] + list(ANSWER_REASONS)
    assert sorted(reasons + list(RETIRED_REASONS)) == sorted(get_args(RemovalReason))  # each once
    for reason in reasons:
        assert any(r == reason for case in CASES.values() for r, _ in case.removed), reason
        assert CASES[KEPT_BY[reason]].kept, reason


def test_every_excerpt_is_cut_from_the_stored_source() -> None:
    ev = evidence()
    draft_text = " ".join(
        c.draft.text for c in CASES.values() if c.draft.text and c.kept
    )
    verdict = verify(Draft(text=draft_text), ev)
    assert verdict.kept
    for sentence in verdict.kept:
        for citation in sentence.citations:
            msg = ev[citation.message_id]
            parts = {"body": msg.body, "subject": msg.subject}
            parts.update({f"attachment:{a.name}": a.text for a in msg.attachments})
            ex = citation.excerpt
            assert parts[ex.part][ex.start : ex.end] == ex.text
            assert ex.text


def test_removed_sentence_keeps_what_the_model_wrote() -> None:
    verdict = verify(text(f"Paid in full [{NEVER}]."), evidence())
    assert verdict.removed[0].text == f"Paid in full [{NEVER}]."


def test_best_passage_is_the_most_overlapping_one() -> None:
    verdict = verify(text(f"The repair costs will be paid by 5 December 2025 [{M1}]."), evidence())
    excerpt = verdict.kept[0].citations[0].excerpt
    assert not excerpt.matched_quote
    assert "repair costs of €1,200.50 will be paid by 5 December 2025" in excerpt.text


def test_answer_text_joins_kept_sentences() -> None:
    verdict = verify(text(f"The claim was accepted [{M1}]. Noise. Photos were sent [{M2}]."), evidence())
    answer = verdict.answer()
    assert answer is not None
    assert answer.text == "The claim was accepted. Photos were sent."
    assert verify(text("Noise."), evidence()).answer() is None
