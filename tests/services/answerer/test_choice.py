"""An extract-style answer made of the chosen sentences (services/answerer/choice.py):
word for word, with who wrote them and when, cited to their message."""

from __future__ import annotations

from datetime import UTC, datetime

from pmsearch.services.answerer.choice import chosen_statements
from pmsearch.shared.messages import ChosenSentence, EvidenceMessage

ACCEPT = EvidenceMessage(
    message_id="m-accept", tenant_id="acme", thread_id="t-golf", mailbox="alice",
    sender="Sabine Roth <sabine@northwind.example>", date=datetime(2024, 4, 3, tzinfo=UTC),
    subject="Decision on claim CLM-2024-55817", body="The claim is accepted. We will pay EUR 2,115.50.",
)


def chosen(text: str, part: str = "body", mid: str = "m-accept") -> ChosenSentence:
    return ChosenSentence(message_id=mid, part=part, text=text)


def test_neighbouring_sentences_of_one_message_make_one_statement_with_who_and_when():
    (s,) = chosen_statements([chosen("The claim is accepted."), chosen("We will pay EUR 2,115.50.")], [ACCEPT])
    assert s.text == 'Sabine Roth, 3 April: "The claim is accepted. We will pay EUR 2,115.50."'
    assert s.citations == ["m-accept"]


def test_a_quoted_sentence_names_its_author_and_an_attached_one_its_sender():
    quoted, attached = chosen_statements(
        [chosen("Please send the photos.", "quoted:quoted from Anna Weber"), chosen("Total: EUR 2,115.50", "attachment:decision.pdf")],
        [ACCEPT],
    )
    assert quoted.text == 'Sabine Roth, 3 April, quoted from Anna Weber: "Please send the photos."'
    assert attached.text == 'Sabine Roth, 3 April: "Total: EUR 2,115.50"'


def test_a_sentence_of_a_message_outside_the_evidence_is_left_out():
    assert chosen_statements([chosen("Anything.", mid="m-elsewhere")], [ACCEPT]) == []


def test_a_sentence_with_double_quotes_is_set_in_marks_they_do_not_close():
    (s,) = chosen_statements([chosen('The garage wrote "ready on Friday".')], [ACCEPT])
    assert s.text == 'Sabine Roth, 3 April: «The garage wrote "ready on Friday".»'


def test_a_statement_of_the_mails_words_passes_the_verifier_and_the_answer_says_its_style():
    from pmsearch.services.verifier.service import verify
    from pmsearch.shared.messages import Draft
    from tests.services.verifier.factory import M3, evidence

    ev = evidence()
    said = ev[M3].body.split("\u00a0Thanks")[0]  # typographic quotes inside, a soft hyphen, a dash
    draft = Draft(sentences=chosen_statements([chosen(said, mid=M3)], list(ev.values())), style="extract")
    verdict = verify(draft, ev, question="What did the adjuster say about the payment?")
    assert [s.text for s in verdict.kept] == [draft.sentences[0].text] and not verdict.removed
    assert verdict.answer().style == "extract"

