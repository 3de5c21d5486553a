"""The passages as sentences to choose from (shared/extracts.py): labels in the order
shown, the choice read back, and how much of the question a choice holds."""

from __future__ import annotations

from datetime import UTC, datetime

from pmsearch.shared import extracts
from pmsearch.shared import passages as P
from pmsearch.shared.fencing import Fence
from pmsearch.shared.messages import EvidenceMessage

QUESTION = "What will glass cover for the van cost us per year?"


def msg(mid: str, subject: str, body: str, day: int) -> EvidenceMessage:
    return EvidenceMessage(message_id=mid, tenant_id="globex", thread_id=f"t-{mid}", mailbox="carol",
                           sender="Harbor Mutual <claims@harbormutual.example>", date=datetime(2024, 4, day, tzinfo=UTC),
                           subject=subject, body=body)


DECISION = msg("m-decision", "Decision on claim HM-88213",
               "We have decided on the hail damage to the Ford Transit. We pay EUR 3,180.00 for the bodywork. "
               "Policy HM-COM-55120 does not include glass cover, so the windscreen is not insured.", 15)
QUOTE = msg("m-quote", "Glass cover for the van",
            "Glass cover for the Ford Transit van would cost EUR 96.00 per year. It starts on the first of the month.", 20)


def shown() -> list[P.Passage]:
    return P.build(QUESTION, [DECISION, QUOTE])


def test_every_sentence_shown_is_labelled_once_in_the_order_shown():
    passages = shown()
    sentences = extracts.labelled(passages)
    assert [s.label for s in sentences] == [f"S{i}" for i in range(1, len(sentences) + 1)]
    assert [s.text for s in sentences] == [t for p in passages for _, t in p.sentences]
    assert {s.passage.message_id for s in sentences} == {"m-decision", "m-quote"}


def test_the_rendered_block_puts_each_label_before_its_sentence_inside_the_fence():
    fence = Fence.new()
    block = extracts.render(shown(), fence)
    assert block.startswith(f"<<<UNTRUSTED evidence {fence.marker}>>>")
    for s in extracts.labelled(shown()):
        assert f"\n{s.label} {s.text}" in block


def test_a_choice_is_read_in_the_order_shown_once_each_and_at_most_three():
    sentences = extracts.labelled(P.build(QUESTION, [DECISION, QUOTE], budget=5000))
    labels = [s.label for s in sentences]
    chosen = extracts.read_choice([labels[2], labels[0], labels[0], "S99", labels[1], labels[3]], sentences)
    assert [s.label for s in chosen] == labels[:3]


def test_the_answering_sentence_holds_more_of_the_question_than_another_matters_figure():
    passages = shown()
    sentences = extracts.labelled(passages)
    price = next(s for s in sentences if "96.00" in s.text)
    bodywork = next(s for s in sentences if "3,180.00" in s.text)
    right = extracts.coverage(QUESTION, [price], passages)
    wrong = extracts.coverage(QUESTION, [bodywork], passages)
    assert right.sentences > wrong.sentences
    assert right.passages >= right.sentences and wrong.passages >= wrong.sentences
    assert extracts.coverage(QUESTION, [], passages) == extracts.Coverage(0.0, 0.0)
