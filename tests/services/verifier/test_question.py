"""What a question pins down, and the sentences that answer about something else."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pmsearch.services.verifier import rules
from pmsearch.services.verifier.question import AMOUNT, IDENTIFIER, LINK, WHEN, gives, pinned
from pmsearch.services.verifier.service import verify
from pmsearch.shared.messages import Draft, DraftSentence, EvidenceMessage
from tests.services.verifier.factory import M1, M2, M5, M6, evidence, message


def _verify(question: str, *sentences: tuple[str, str], extra=()):
    ev = evidence()
    for m in extra:
        ev[m.message_id] = m
    draft = Draft(sentences=[DraftSentence(text=t, citations=[c]) for t, c in sentences])
    return verify(draft, ev, question=question)


# ------------------------------------------------------------------- what is pinned


def test_names_are_capitalised_words_past_a_clauses_first_word() -> None:
    assert pinned("How much was Autohaus Berger's final invoice for the Golf repair?").names == (
        "autohaus", "berger", "golf",
    )


def test_a_clauses_first_word_and_the_asker_are_not_names() -> None:
    assert pinned("Is my mailbox full? Do I have to verify my account?").names == ()


def test_hyphenated_names_count_by_part_and_lone_letters_not_at_all() -> None:
    assert pinned("What rates did Lyon Fret offer for the Munich-Lyon run in hall B?").names == (
        "lyon", "fret", "munich",
    )


def test_a_domain_the_question_names_is_pinned_whole() -> None:
    assert pinned("What does invoice-check.example want?").names == ("invoice-check.example",)


def test_months_are_pinned_even_first_but_not_may_asking() -> None:
    assert pinned("March: how did the June figures look?").months == ("march", "june")
    assert pinned("May I see the report from May?").months == ("may",)
    assert pinned("Did you march on?").months == ()


def test_codes_are_pinned_as_codes_not_names() -> None:
    p = pinned("Was invoice INV-2024-0173 paid by Bob?")
    assert p.codes == ("INV-2024-0173",) and p.names == ("bob",)


def test_the_asked_figure_is_named_as_the_removal_names_it() -> None:
    assert (pinned("How much is the June invoice?").asks, pinned("Wann wurde es veröffentlicht?").asks) == (AMOUNT, WHEN)


@pytest.mark.parametrize(
    ("kind", "sentence", "expected"),
    [
        (AMOUNT, "It costs EUR 1,260.00.", True),
        (AMOUNT, "The return has been filed.", False),
        (WHEN, "The plumber comes on Thursday.", True),
        (WHEN, "It starts at 10:30.", True),
        (WHEN, "It is in the Isar room.", False),
        (WHEN, "The VAT return was filed today.", False),  # the mail's today, not a day
        (WHEN, "Die Toolbar kam am Montag raus.", True),
        (WHEN, "La bêta a été installée en décembre.", True),
        (WHEN, "Die Version wurde am Wochenende im Laufe der Woche veröffentlicht.", False),
        (IDENTIFIER, "The credit note is CN-2024-019.", True),
        (IDENTIFIER, "Call +49 40 8830 1456.", True),
        (IDENTIFIER, "Bob sent a credit note of EUR 1,260.00 for 42 tiles.", False),
        (IDENTIFIER, "The alarm is off from 06:00 to 10:00 on 9 March.", False),
        (LINK, "See https://billing.example/invoices/7.", True),
        (LINK, "The link was broken.", False),
    ],
)
def test_whether_a_sentence_gives_what_was_asked(kind: str, sentence: str, expected: bool) -> None:
    assert gives(kind, sentence) is expected


# ------------------------------------------------------------------ in verification


def test_a_sentence_whose_sources_never_name_the_questions_name_is_removed() -> None:
    # True of the StreamFlix receipt, which is about no Hooli invoice.
    verdict = _verify("How much is the Hooli invoice?", ("Amount charged: EUR 12.99.", M6))
    assert not verdict.kept
    assert [(r.reason, r.offending) for r in verdict.removed] == [("off_question", "hooli")]


def test_a_name_in_the_sender_or_another_message_of_the_thread_is_enough() -> None:
    # M5 never says "Anna" in a way tied to "Schmidt"? It does; M1's sender and thread do too.
    verdict = _verify("Did Anna's insurer settle the Golf claim?", ("The claim is settled.", M5))
    assert [s.text for s in verdict.kept] == ["The claim is settled."]


def test_a_name_only_another_thread_holds_does_not_count() -> None:
    other = message("m555555555555", "Hooli Cloud: your invoice is ready.", subject="Hooli").model_copy(
        update={"thread_id": "th-hooli"}
    )
    receipt = evidence()[M6].model_copy(update={"thread_id": "th-streamflix"})
    verdict = _verify("How much is the Hooli invoice?", ("Amount charged: EUR 12.99.", M6), extra=[other, receipt])
    assert [r.reason for r in verdict.removed] == ["off_question"]


def test_a_month_is_named_in_the_text_or_by_the_messages_date() -> None:
    receipt = evidence()[M6].model_copy(update={"date": datetime(2024, 6, 2, tzinfo=UTC)})
    in_text = _verify("What did StreamFlix charge me in March?", ("Amount charged: EUR 12.99.", M6))
    by_date = _verify("What did StreamFlix charge me in June?", ("Amount charged: EUR 12.99.", M6), extra=[receipt])
    neither = _verify("What did StreamFlix charge me in October?", ("Amount charged: EUR 12.99.", M6))
    assert in_text.kept and by_date.kept
    assert [(r.reason, r.offending) for r in neither.removed] == [("off_question", "october")]


@pytest.mark.parametrize(
    "question,versions",
    [
        ("How much was Autohaus Berger's final invoice for the Golf repair?", ("final",)),
        ("What's the amount on Fabrikam's corrected invoice?", ("corrected",)),
        ("What's the latest on the new forklifts?", ()),  # how people ask for the current one
    ],
)
def test_which_version_of_a_document_is_pinned(question, versions) -> None:
    assert pinned(question).versions == versions


def test_the_final_invoice_must_be_named_by_the_cited_message() -> None:
    estimate = message("m000000000e01", "The repair estimate is EUR 2,340.50.", subject="Golf repair estimate")
    final = message("m000000000e02", "Our final invoice for the Golf repair: EUR 2,412.00.", subject="Golf repair")
    question = "How much was the final invoice for the Golf repair?"
    wrong = _verify(question, ("The Golf repair cost EUR 2,340.50.", estimate.message_id), extra=[estimate, final])
    right = _verify(question, ("The Golf repair cost EUR 2,412.00.", final.message_id), extra=[estimate, final])
    assert [(r.reason, r.offending) for r in wrong.removed] == [("off_question", "final")]
    assert [s.text for s in right.kept] == ["The Golf repair cost EUR 2,412.00."]


def test_an_answer_without_the_kind_of_figure_asked_for_is_removed_whole() -> None:
    verdict = _verify(
        "How much did the insurer pay for the Golf?",
        ("The claim is accepted.", M1),
        ("The photos were received.", M1),
    )
    assert not verdict.kept
    assert {(r.reason, r.offending) for r in verdict.removed} == {("asked_figure_missing", AMOUNT)}


def test_a_german_when_question_answered_without_a_date_is_removed_whole() -> None:
    bare = message("m9", "Die Toolbar kommt raus, sobald sie fertig ist.")
    verdict = _verify("Wann kommt die Toolbar raus?", ("Die Toolbar kommt raus, sobald sie fertig ist.", "m9"), extra=[bare])
    assert [(r.reason, r.offending) for r in verdict.removed] == [("asked_figure_missing", WHEN)]


def test_one_sentence_with_the_asked_figure_keeps_the_others() -> None:
    verdict = _verify(
        "How much did the insurer pay for the Golf?",
        ("The claim is accepted.", M1),
        ("The repair costs of €1,200.50 will be paid.", M1),
    )
    assert len(verdict.kept) == 2


# ------------------------------------------------------------------- off topic


def _receipt_in(thread_id: str):
    return evidence()[M6].model_copy(update={"thread_id": thread_id})


def test_a_yes_to_a_yes_no_question_is_checked_whole() -> None:
    # The name is the sentence's own and the letter holds it; "new bank details" are the
    # question's words, and here they are the claim.
    letter = message(
        "m808080808080", "Sabine Roth, claims adjuster: the payout for the Golf claim goes to your new account ending in 3391.",
        subject="Decision on claim CLM-2024-55817",
    ).model_copy(update={"thread_id": "t-decision"})
    verdict = _verify(
        "Did the insurer ask us for new bank details for the payout?",
        ("Yes, Sabine Roth asked for new bank details for the payout.", "m808080808080"),
        extra=[letter],
    )
    assert not verdict.kept
    assert [r.reason for r in verdict.removed] == ["unsupported_claim"]


def test_a_paraphrase_that_repeats_one_question_word_its_sources_lack_is_kept() -> None:
    # "photos" is not in the insurer's letter (M1 speaks of them; M5 does not); one word
    # the sources lack is paraphrase, not another topic.
    verdict = _verify(
        "Did the insurer settle the Golf claim after we sent the photos?",
        ("The insurer settled the Golf claim CLM-2024-55817.", M5),
    )
    assert verdict.kept


def _offsite_cost():
    thread = message("m555555555555", "Our team offsite is at the lake.", subject="Receipt")
    thread = thread.model_copy(update={"thread_id": "t-streamflix"})
    return _verify(
        "How much is the team offsite costing per person?",
        ("The team offsite costs EUR 12.99 on the Premium plan.", M6),
        extra=[thread, _receipt_in("t-streamflix")],
    )


def test_question_words_found_elsewhere_in_the_cited_thread_count_for_the_thread_check(monkeypatch) -> None:
    monkeypatch.setattr(rules, "borrowed_subject", lambda *args: None)
    assert not any(r.reason == "off_question" for r in _offsite_cost().removed)


def test_question_words_only_elsewhere_in_the_thread_do_not_carry_the_claim() -> None:
    # The thread names the offsite; the EUR 12.99 comes from a receipt's sentence, and
    # neither that sentence nor the receipt's subject or sender names anything asked.
    assert [(r.reason, r.offending) for r in _offsite_cost().removed] == [("off_question", "team offsite costs")]


def _forklift_order():
    return message(
        "m606060606060", "Thanks Tom, order placed with Linde today, delivery expected in mid-June.",
        subject="Re: Budget request: two electric forklifts",
    )


def test_an_answer_that_restates_the_question_in_its_own_words_is_kept() -> None:
    # "new" and "arrive" are the question's words, not the mail's ("delivery expected");
    # the sentence adds "mid-June", which the order message holds.
    verdict = _verify(
        "When will the new forklifts arrive?",
        ("The new forklifts will arrive in mid-June.", "m606060606060"),
        extra=[_forklift_order()],
    )
    assert [s.text for s in verdict.kept] == ["The new forklifts will arrive in mid-June."]


def _meeting_note():
    return message(
        "m616161616161", "Decisions\n1. Forklift refresher training for all drivers on 4 April.",
        subject="Meeting note: warehouse",
    )


def test_saying_when_it_is_scheduled_claims_no_more_than_the_date() -> None:
    verdict = _verify(
        "When is the forklift refresher training for the drivers?",
        ("The forklift refresher training is scheduled for April 4th.", "m616161616161"),
        extra=[_meeting_note()],
    )
    assert [s.text for s in verdict.kept] == ["The forklift refresher training is scheduled for April 4th."]


def test_scheduled_is_a_claim_where_the_question_asks_no_time() -> None:
    verdict = _verify(
        "Who gives the forklift refresher training on 4 April?",
        ("The forklift refresher training is scheduled for April 4th.", "m616161616161"),
        extra=[_meeting_note()],
    )
    assert [(r.reason, r.offending) for r in verdict.removed] == [("unsupported_claim", "scheduled")]


@pytest.mark.parametrize(
    ("question", "polar"),
    [
        ("Did the insurer accept the Golf claim?", True),
        ("Could you tell me if the insurer paid?", True),
        ("Can you check my mail and tell me when my dentist appointment is?", False),
        ("When is my dentist appointment?", False),
    ],
)
def test_a_request_to_tell_when_is_no_yes_no_question(question, polar) -> None:
    assert pinned(question).polar is polar


def _appointment():
    return message(
        "m626262626262", "Dear Ms Martin,\nwe confirm your appointment on Monday, 29 April 2024 at 8:00.\nDr. Lang dental practice",
        subject="Appointment reminder", sender="Zahnarztpraxis Dr. Lang <praxis@dr-lang.example>",
    )


def test_a_bare_no_before_an_answer_to_when_denies_nothing() -> None:
    sentence = "No, the dentist's appointment is on Monday, 29 April 2024 at 8:00."
    verdict = _verify("Can you check my mail and tell me when my dentist appointment is?", (sentence, "m626262626262"),
                      extra=[_appointment()])
    assert [s.text for s in verdict.kept] == [sentence]


def test_a_denial_in_an_answer_to_when_is_still_checked_whole() -> None:
    verdict = _verify("When is my dentist appointment?",
                      ("No, the dentist appointment is not on Monday.", "m626262626262"), extra=[_appointment()])
    assert [(r.reason, r.offending) for r in verdict.removed] == [("unsupported_claim", "dentist")]


def _review_moved():
    return message(
        "m707070707070",
        "Hi all,\n\nthe quarterly review has been moved to Tuesday, 14 May, in the Isar room.\n\nThanks\nPriya",
        subject="Quarterly review moved", sender="Priya Nair <priya@acme.example>",
    )


def test_a_name_that_is_only_the_cited_messages_sender_adds_nothing_to_the_questions_words() -> None:
    verdict = _verify(
        "Who presents first at the quarterly review?",
        ("Priya Nair presents first at the quarterly review.", "m707070707070"),
        extra=[_review_moved()],
    )
    assert not verdict.kept
    assert verdict.removed[0].reason == "unsupported_claim"


def test_a_name_the_message_states_is_an_answer_in_other_words() -> None:
    verdict = _verify(
        "Who leads the quarterly review?",
        ("Priya Nair leads the quarterly review.", "m717171717171"),
        extra=[message("m717171717171", "Priya Nair will chair the quarterly review on 14 May.",
                       sender="Tom Richter <tom@acme.example>")],
    )
    assert [s.text for s in verdict.kept] == ["Priya Nair leads the quarterly review."]


def test_the_questions_words_count_against_a_sentence_that_adds_nothing_to_them() -> None:
    verdict = _verify(
        "Did the warehouse staff order new forklifts for the night shift?",
        ("Yes, the warehouse staff ordered new forklifts for the night shift.", "m606060606060"),
        extra=[_forklift_order()],
    )
    assert not verdict.kept
    assert verdict.removed[0].reason in {"unsupported_claim", "off_question"}


def test_a_denial_gets_no_allowance_for_the_questions_words() -> None:
    verdict = _verify(
        "Will the new forklifts arrive before mid-June?",
        ("No, the new forklifts will not arrive before mid-June.", "m606060606060"),
        extra=[_forklift_order()],
    )
    assert not verdict.kept


# ------------------------------------------------------------------- negations


def test_a_short_denial_whose_words_the_source_lacks_is_removed() -> None:
    verdict = _verify("Anything wrong with my inbox?", ("No, my mailbox is not full.", M1))
    assert not verdict.kept
    assert [(r.reason, r.offending) for r in verdict.removed] == [("unsupported_claim", "mailbox full")]


def test_a_short_denial_the_source_states_is_kept() -> None:
    verdict = _verify("Were the photos blurry?", ("No, the photos were not blurry.", M2))
    assert verdict.kept


def _review(message_id: str, body: str, thread: str, subject: str) -> EvidenceMessage:
    return message(message_id, body, subject=subject, sender="Tom Richter <tom@acme.example>").model_copy(
        update={"thread_id": thread}
    )


def test_a_quarter_is_pinned_apart_from_names() -> None:
    pins = pinned("When is the Q2 quarterly review?")
    assert (pins.quarters, pins.names) == (("q2",), ())


def test_a_thread_saying_quarterly_answers_about_the_quarter_it_does_not_name() -> None:
    tom = _review("m700000000001", "The quarterly review will take place on Thursday, 16 May at 10:00.", "th-tom",
                  "Quarterly review: Thursday 16 May")
    verdict = _verify("When is the Q2 quarterly review?", ("The quarterly review is on 16 May.", tom.message_id),
                      extra=[tom])
    assert [s.text for s in verdict.kept] == ["The quarterly review is on 16 May."]


def test_the_questions_quarter_restated_is_no_figure_to_find() -> None:
    tom = _review("m700000000004", "The quarterly review will take place on Thursday, 16 May at 10:00.", "th-tom",
                  "Quarterly review: Thursday 16 May")
    sentence = "The Q2 quarterly review will take place on Thursday, 16 May at 10:00."
    verdict = _verify("When is the Q2 quarterly review?", (sentence, tom.message_id), extra=[tom])
    assert [s.text for s in verdict.kept] == [sentence]


# ------------------------------------------------------- details added to an answer


SETTLED = "your claim CLM-2024-55817 for the Golf (M-AC 4821) is settled."


def _detail(text: str, cited: str, completes: int = 0) -> DraftSentence:
    return DraftSentence(text=text, citations=[cited], completes=completes)


def test_a_detail_goes_with_the_answer_it_completes() -> None:
    ev = evidence()
    draft = Draft(sentences=[DraftSentence(text="The Golf claim was paid by a unicorn in Berlin.", citations=[M5]),
                             _detail(f'Anna Schmidt: "{SETTLED}"', M5)])
    verdict = verify(draft, ev, question="Was the Golf claim settled?")
    assert [r.reason for r in verdict.removed] == ["unsupported_claim", "answer_removed"] and not verdict.kept


def test_a_detail_stays_with_an_answer_that_stands() -> None:
    draft = Draft(sentences=[DraftSentence(text="Yes, the Golf claim is settled.", citations=[M5]),
                             _detail(f'Anna Schmidt: "{SETTLED}"', M5)])
    verdict = verify(draft, evidence(), question="Was the Golf claim settled?")
    assert len(verdict.kept) == 2, verdict.removed


def test_words_that_only_say_how_to_reach_someone_are_no_claim_beside_the_address() -> None:
    adjuster = message("m626262626262", "Your adjuster is Sabine Roth (sabine.roth@insurer.example, +49 40 8830 1456).",
                       subject="Golf claim registered")
    verdict = _verify(
        "Who is handling the Golf claim, and how do I reach her?",
        ("You can contact Sabine Roth via email at sabine.roth@insurer.example or by phone at +49 40 8830 1456.",
         adjuster.message_id),
        extra=[adjuster],
    )
    assert len(verdict.kept) == 1, verdict.removed


def test_contact_words_are_a_claim_without_an_address() -> None:
    adjuster = message("m636363636363", "Your adjuster is Sabine Roth.", subject="Golf claim registered")
    verdict = _verify("Who is handling the Golf claim?",
                      ("You can phone or email Sabine Roth to contact her.", adjuster.message_id), extra=[adjuster])
    assert [r.reason for r in verdict.removed] == ["unsupported_claim"]


def test_saying_an_amount_is_a_price_claims_no_more_than_the_amount() -> None:
    summit = message("m646464646464", "Register now - early-bird price EUR 390 until 15 May.", subject="Logistics Summit")
    verdict = _verify("How much is the early-bird ticket for the summit?",
                      ("The early-bird ticket costs EUR 390.", summit.message_id), extra=[summit])
    assert len(verdict.kept) == 1, verdict.removed


def test_price_words_without_an_amount_are_a_claim() -> None:
    summit = message("m656565656565", "Register now for the summit.", subject="Logistics Summit")
    verdict = _verify("What about the summit?",
                      ("The summit ticket costs a fortune at the early-bird price.", summit.message_id), extra=[summit])
    assert [r.reason for r in verdict.removed] == ["unsupported_claim"]


def test_a_restated_question_with_a_word_of_its_own_is_an_answer() -> None:
    verdict = _verify("What did the insurer decide on the Golf claim?", ("The insurer accepted the Golf claim.", M1))
    assert [s.text for s in verdict.kept] == ["The insurer accepted the Golf claim."]


def test_a_yes_that_restates_a_yes_no_question_is_an_answer() -> None:
    verdict = _verify("Did the insurer accept the claim?", ("Yes, the insurer accepted the claim.", M1))
    assert [s.text for s in verdict.kept] == ["Yes, the insurer accepted the claim."]


def test_the_questions_own_month_does_not_say_when() -> None:
    """"For March" names the VAT asked about; it does not say when it is debited."""
    assert not gives(WHEN, "The VAT return for March has been filed.", months=("march",))
    assert gives(WHEN, "The March VAT is debited in April.", months=("march",))


# ------------------------------------------------------- a "yes" says the act happened


_INVOICE = message("m000000000f01", "Our invoice FP-3391 for 5,000 brochures comes to EUR 1,250.00. Payment within 30 days, please.",
                   sender="Sven Olsen <sven@fabrikam.example>", subject="Invoice FP-3391 - brochures")
_PAID = message("m000000000f02", "We paid the Fabrikam invoice FP-3391 for the brochures today.",
                sender="Bob Keller <bob@acme.example>", subject="Re: Invoice FP-3391 - brochures")


def test_a_yes_from_a_message_that_says_the_act_happened_is_kept() -> None:
    verdict = _verify("Have we paid Fabrikam for the brochures yet?",
                      ("Yes, we paid Fabrikam for the brochures.", _PAID.message_id), extra=[_INVOICE, _PAID])
    assert [s.text for s in verdict.kept] == ["Yes, we paid Fabrikam for the brochures."]


def test_the_premise_of_a_yes_no_question_need_not_be_said_done() -> None:
    """"After we sent the photos" is what the asker says happened, not what is asked."""
    decision = message("m000000000f03",
                       "Thank you for sending the photos. As your insurer we are pleased to tell you that the claim is accepted.",
                       sender="Northwind Claims <claims@northwind.example>", subject="Claim decision")
    verdict = _verify("Did the insurer accept the claim after we sent the photos?",
                      ("Yes, after we sent the photos the insurer accepted the claim.", decision.message_id),
                      extra=[decision])
    assert [s.text for s in verdict.kept] == ["Yes, after we sent the photos the insurer accepted the claim."]


def test_a_yes_in_other_words_than_the_mail_is_left_to_the_count() -> None:
    """The mail never names the act ("that works for us"): paraphrase, not a request."""
    reply = message("m000000000f04", "Ms Martin, that works for us. Please send the contract; we'd like to start on 4 June.",
                    sender="Art Vandelay <art@vandelay.example>", subject="Re: Quote for Vandelay: weekly pallets")
    verdict = _verify("Did Vandelay take our offer?", ("Yes, Vandelay took our offer.", reply.message_id), extra=[reply])
    assert [s.text for s in verdict.kept] == ["Yes, Vandelay took our offer."]


LYON = message(
    "m737373737373",
    "Bonjour Alice, je vous confirme notre réunion à Lyon le jeudi 18 avril à 14h00, dans nos bureaux au "
    "12 rue de Gerland. Cordialement, Camille",
    subject="Réunion à Lyon",
)


def test_a_translation_of_mail_in_another_language_stands_on_its_figures() -> None:
    verdict = _verify(
        "When do I need to be in Lyon, and where exactly?",
        ("You need to be in Lyon on 18 April at 14:00, at the office located at 12 Rue de Gerland.", LYON.message_id),
        extra=[LYON],
    )
    assert len(verdict.kept) == 1, verdict.removed


def test_a_translation_with_a_figure_the_mail_lacks_is_removed() -> None:
    verdict = _verify(
        "When do I need to be in Lyon, and where exactly?",
        ("You need to be in Lyon on 19 April at 14:00, at the office located at 12 Rue de Gerland.", LYON.message_id),
        extra=[LYON],
    )
    assert [r.reason for r in verdict.removed] == ["figure_not_found"]


def test_a_denial_citing_mail_in_another_language_is_counted_word_by_word() -> None:
    verdict = _verify(
        "When do I need to be in Lyon?",
        ("The meeting on 18 April at 14:00 is not at the office but held online.", LYON.message_id),
        extra=[LYON],
    )
    assert [r.reason for r in verdict.removed] == ["unsupported_claim"]


@pytest.mark.parametrize(
    "text,english",
    [
        ("Please find the invoice for March attached; it is due in 30 days.", True),
        ("Ab dem 1. April liefern und holen wir nur noch über unser neues Lager ab.", False),
        ("Je vous confirme notre réunion à Lyon le jeudi 18 avril.", False),
        ("", True),
    ],
)
def test_english_is_told_by_its_stop_words(text: str, english: bool) -> None:
    from pmsearch.shared.text.words import in_english

    assert in_english(text) is english


OFFER = message(
    "m747474747401", "The renewal for 12 months costs EUR 2,280.00, or EUR 2,040.00 if you sign for 24 months.",
    subject="Renewal of your hosting contract", sender="Blue Yonder Hosting <contracts@blueyonder.example>",
).model_copy(update={"thread_id": "th-offer"})
FORWARD = message(
    "m747474747402",
    "Frank, which option do you prefer, 12 or 24 months?\n\n---------- Forwarded message ---------\n"
    "From: Blue Yonder Hosting <contracts@blueyonder.example>\nSubject: Renewal of your hosting contract",
    subject="Fwd: Renewal of your hosting contract", sender="Carol Jensen <carol@globex.example>",
).model_copy(update={"thread_id": "th-forward"})
FRANK = message(
    "m747474747403", "24 months, please. Frank", subject="Re: Fwd: Renewal of your hosting contract",
    sender="Frank Li <frank@globex.example>",
).model_copy(update={"thread_id": "th-forward"})
RENEWAL = "Which hosting renewal did Frank go for, and how much is it?"


def test_a_name_may_be_that_of_whom_a_cited_message_was_forwarded_to() -> None:
    verdict = _verify(RENEWAL, ("The 24-month renewal costs EUR 2,040.00.", OFFER.message_id), extra=[OFFER, FORWARD, FRANK])
    assert len(verdict.kept) == 1, verdict.removed


def test_without_the_forward_the_offer_is_about_no_one_the_question_names() -> None:
    verdict = _verify(RENEWAL, ("The 24-month renewal costs EUR 2,040.00.", OFFER.message_id), extra=[OFFER, FRANK])
    assert [(r.reason, r.offending) for r in verdict.removed] == [("off_question", "frank")]


def test_a_date_of_what_the_question_asks_of_is_kept() -> None:
    check_in = message("m757575757502", "Please be at the airport by 07:10 on 23 April; boarding closes at 07:40.",
                       subject="Your flight to Hamburg")
    verdict = _verify("When do I need to be at the airport for the Hamburg trip?",
                      ("Be at the airport by 07:10 on 23 April.", check_in.message_id), extra=[check_in])
    assert len(verdict.kept) == 1, verdict.removed


def test_a_price_in_mail_in_another_language_is_not_asked_to_share_the_questions_words() -> None:
    quote = message("m757575757503", "Стоимость перевозки контейнера: 2 450 евро, срок оплаты 30 дней.",
                    subject="Предложение", sender="Baltic Freight <offer@baltic-freight.example>")
    verdict = _verify("How much is Baltic Freight charging for the container transport?",
                      ("Baltic Freight charges 2 450 euros.", quote.message_id), extra=[quote])
    assert len(verdict.kept) == 1, verdict.removed


@pytest.mark.parametrize(
    "sentence,kept",
    [
        ("Pay the chairs invoice into DE12 7002 0270 0015 8842 19.", True),
        ("Acme Logistics GmbH, Accounts payable, invoice INV-2024-0173.", False),  # a code, no account
    ],
)
def test_which_account_to_pay_into_is_answered_by_an_account_number(sentence: str, kept: bool) -> None:
    invoice = message("m767676767601", "Invoice INV-2024-0173 for 12 chairs. Bill to: Acme Logistics GmbH, Accounts "
                      "payable. Please pay into IBAN DE12 7002 0270 0015 8842 19.", subject="Invoice INV-2024-0173")
    verdict = _verify("Which account do we pay the chairs invoice into?", (sentence, invoice.message_id), extra=[invoice])
    assert bool(verdict.kept) is kept, verdict.removed
    assert kept or [(r.reason, r.offending) for r in verdict.removed] == [("asked_figure_missing", "an account number")]


# ------------------------------------------------------- which one, and words off the thread


def test_a_sentence_that_takes_its_subject_from_the_question_and_its_facts_elsewhere_is_removed() -> None:
    verdict = _verify(
        "How much is the team offsite costing per person?",
        ("The team offsite costs EUR 12.99 on the Premium plan.", M6),
        extra=[_receipt_in("t-streamflix")],
    )
    assert not verdict.kept
    assert [(r.reason, r.offending) for r in verdict.removed] == [("off_question", "team offsite costs")]


def test_a_figure_alone_does_not_make_an_answer_of_another_matters_message() -> None:
    # The newsletter shares "cost" with the question and holds the amount; the sentence
    # adds no word of its own. (With "$100" the figures check removes it first: an
    # amount keeps its currency and scale.)
    newsletter = message(
        "m707070707070", "The latest rail strike cost German shippers an estimated EUR 100 million a day.",
        subject="Logistics Weekly #12",
    ).model_copy(update={"thread_id": "t-newsletter"})
    verdict = _verify(
        "How much is the team offsite costing per person?",
        ("The team offsite is costing per person 100.", "m707070707070"),
        extra=[newsletter],
    )
    assert not verdict.kept
    assert [r.reason for r in verdict.removed] == ["off_question"]


@pytest.mark.parametrize(
    "question,which",
    [
        ("Which garage replaced the Transit's windscreen?", ("gara",)),
        ("Which container is the Baltic Freight invoice for?", ("cont",)),
        ("Which of my parcels were delayed?", ()),
        ("What did the garage say?", ()),
    ],
)
def test_what_a_which_question_asks_for_one_of_is_pinned(question, which) -> None:
    assert pinned(question).which == which


def test_a_which_answer_names_the_kind_or_gives_its_identifier() -> None:
    decision = message("m000000000w01", "Transit: windscreen rejected, glass replacement is not covered. We pay EUR 3,180.00.",
                       subject="Decision on claim HM-88213", sender="Harbor Mutual Claims <claims@harbormutual.example>")
    decision = decision.model_copy(update={"thread_id": "th-transit"})  # the Golf thread has a garage
    invoice = message("m000000000w02", "Baltic Freight: sea freight Gdansk - Hamburg, MSKU 448120, EUR 2,950.00.",
                      subject="Invoice BF-2024-117")
    insurer = _verify("Which garage replaced the Transit's windscreen?",
                      ("Harbor Mutual replaced the windscreen for EUR 3,180.00.", decision.message_id), extra=[decision])
    box = _verify("Which container is the Baltic Freight invoice for?",
                  ("The invoice is for container MSKU 448120.", invoice.message_id), extra=[invoice])
    assert [(r.reason, r.offending) for r in insurer.removed] == [("off_question", "gara")]
    assert [s.text for s in box.kept] == ["The invoice is for container MSKU 448120."]


def test_what_the_question_asks_about_is_not_taken_from_a_forward() -> None:
    forward = FORWARD.model_copy(update={"body": FORWARD.body.replace("which option", "which garage and which option")})
    verdict = _verify(
        "Which garage does Frank prefer for the renewal?",
        ("The renewal costs EUR 2,040.00 if you sign for two years.", OFFER.message_id),
        extra=[OFFER, forward, FRANK],
    )
    assert [(r.reason, r.offending) for r in verdict.removed] == [("off_question", "gara")]



def test_what_the_model_added_after_an_answer_goes_with_it_and_still_needs_the_questions_code() -> None:
    ev = evidence()
    gone = Draft(sentences=[DraftSentence(text="The Golf claim was paid by a unicorn in Berlin.", citations=[M5]),
                            DraftSentence(text=f'Anna Schmidt: "{SETTLED}"', citations=[M5], follows=0)])
    verdict = verify(gone, ev, question="Was the Golf claim settled?")
    assert [r.reason for r in verdict.removed] == ["unsupported_claim", "answer_removed"] and not verdict.kept
    unnamed = Draft(sentences=[DraftSentence(text=f'Anna Schmidt: "{SETTLED}"', citations=[M5]),
                               DraftSentence(text="The claim is accepted.", citations=[M1], follows=0)])
    verdict = verify(unnamed, ev, question="Was claim CLM-2024-55817 settled?")
    assert [r.reason for r in verdict.removed] == ["off_question"]
