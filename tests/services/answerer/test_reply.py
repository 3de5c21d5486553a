"""A model's answer read as draft sentences, and the follow-up for a left-out part
(services/answerer/reply.py): pure functions, no model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pmsearch.services.answerer.reply import follow_up, leaves_out_less, left_out, written
from pmsearch.shared import passages as P
from pmsearch.shared import prompts
from pmsearch.shared.fencing import Fence
from pmsearch.shared.messages import CarriedAnswer, CarriedSentence, DraftSentence, EvidenceMessage

QUESTION = "When did the insurer accept the Golf claim, and how much do they pay?"


def msg(mid: str, body: str, day: int) -> EvidenceMessage:
    return EvidenceMessage(message_id=mid, tenant_id="acme", thread_id="t1", mailbox="alice", sender="Sabine Roth",
                           date=datetime(2024, 3, 1, tzinfo=UTC) + timedelta(days=day), subject="Claim", body=body)


SHOWN = P.build(QUESTION, [msg("m1", "Photos sent for the claim.", 1), msg("m2", "Claim accepted by the insurer.", 2)])
SCHEMA = prompts.answer_model([p.ref for p in SHOWN], "PlannerAnswer")


def test_sentences_cite_the_messages_behind_their_labels_without_the_labels():
    Sentence = prompts.sentence_model([p.ref for p in SHOWN])
    (draft,) = written(P.labels(SHOWN), [Sentence(text="  The insurer accepted the Golf claim (P2).  ", passages=["P2"])])
    assert (draft.text, draft.citations) == ("The insurer accepted the Golf claim.", ["m2"])


def test_an_echoed_placeholder_or_a_bare_label_is_no_sentence():
    said = [CarriedSentence(text="<one statement>", passages=["P1"]), CarriedSentence(text="(P1)", passages=["P1"])]
    assert written(P.labels(SHOWN), said) == []


def test_the_follow_up_continues_the_attempt_word_for_word_and_asks_for_what_is_left_out():
    carried = CarriedAnswer(sentences=[CarriedSentence(text="The insurer accepted it on 2 March.", passages=["P2"])], fence="ab12",
                            notes=["search: 2 message(s), 2 new"])
    texts = prompts.PromptSettings()
    messages = follow_up(texts, QUESTION, SHOWN, carried, SCHEMA, ["amount"])
    assert messages[:2] == prompts.answer_messages(texts, QUESTION, SHOWN, Fence(marker="ab12"), carried.notes)
    assert messages[2]["content"] == '{"answer":[{"text":"The insurer accepted it on 2 March.","passages":["P2"]}]}'
    assert messages[3]["content"] == prompts.add_missing(texts, ["amount"])


def test_no_follow_up_for_a_reply_naming_passages_no_longer_shown():
    carried = CarriedAnswer(sentences=[CarriedSentence(text="The insurer accepted it on 2 March.", passages=["P7"])], fence="ab12")
    assert follow_up(prompts.PromptSettings(), QUESTION, SHOWN, carried, SCHEMA, ["amount"]) is None


def test_the_second_answer_is_kept_only_when_it_leaves_out_less():
    first = [DraftSentence(text="The insurer accepted the claim on 2 March.")]
    whole = [DraftSentence(text="The insurer accepted the claim on 2 March and pays EUR 2,115.50.")]
    assert left_out(QUESTION, first) == ["amount"] and left_out(QUESTION, whole) == []
    assert leaves_out_less(QUESTION, first, whole)
    assert not leaves_out_less(QUESTION, first, [DraftSentence(text="The insurer accepted the claim in March.")])
    assert not leaves_out_less(QUESTION, first, [])
