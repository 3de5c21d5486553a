"""What a model reads besides the mail (pmsearch/shared/prompts.py): one system prompt, the user
turn's order, the reply schema, the follow-up, and the settings that change them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from pmsearch.shared import passages as P
from pmsearch.shared import prompts
from pmsearch.shared.fencing import Fence
from pmsearch.shared.messages import EvidenceMessage
from pmsearch.shared.prompts import PromptSettings

QUESTION = "Did the insurer accept the Golf claim?"


def msg(mid: str, body: str) -> EvidenceMessage:
    return EvidenceMessage(message_id=mid, tenant_id="acme", thread_id="t1", mailbox="alice", sender="Sabine Roth",
                           date=datetime(2024, 3, 1, tzinfo=UTC), subject="Claim CLM-1", body=body)


def test_the_user_turn_gives_the_code_then_passages_then_question_then_instruction():
    fence = Fence.new()
    shown = P.build(QUESTION, [msg("m1", "Claim accepted.")])
    turn = prompts.user_turn(QUESTION, shown, fence, "Write the answer.", ["search {\"query\": \"golf\"}: 1 message(s), 1 new"])
    assert turn.startswith(f"CODE for this request: {fence.marker}\n\nEvidence passages:\n<<<UNTRUSTED evidence {fence.marker}>>>")
    assert turn.index(fence.end_line) < turn.index("Searched so far:") < turn.index(f"Question: {QUESTION}")
    assert turn.endswith("Write the answer.")


def test_the_system_prompt_is_the_same_for_every_call():
    assert "CODE" in P.SYSTEM and "search:" in P.SYSTEM and "read_thread:" in P.SYSTEM
    assert "{" not in P.RULES  # nothing per call in the cached prefix


def test_the_system_prompt_is_the_same_for_every_call():
    text = prompts.system(PromptSettings())
    assert "CODE" in text and "search:" in text and "read_thread:" in text
    assert "{" not in prompts.RULES  # nothing per call in the cached prefix


def test_a_deployment_replaces_a_prompt_by_setting(monkeypatch):
    monkeypatch.setenv("PM_PROMPT_ANSWER", "Answer in one sentence, citing passages.")
    texts = PromptSettings()
    messages = prompts.answer_messages(texts, QUESTION, P.build(QUESTION, [msg("m1", "Claim accepted.")]), Fence.new())
    assert messages[1]["content"].endswith("Answer in one sentence, citing passages.")
    assert messages[0]["content"] == prompts.system(PromptSettings())


@pytest.mark.parametrize(
    "name,value",
    [("PM_PROMPT_SEARCH", "Give searches."), ("PM_PROMPT_ADD_MISSING", "Add it."),
     ("PM_PROMPT_RULES", "Answer from the passages."), ("PM_PROMPT_WANTED", '{"time": "the hour"}')],
    ids=["search_without_steps", "follow_up_without_what", "rules_without_fence", "wanted_incomplete"],
)
def test_a_prompt_setting_that_would_break_a_call_is_refused_by_name(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError, match=name):
        PromptSettings()


def test_a_sentence_may_name_only_the_refs_shown():
    Sentence = prompts.sentence_model(["P1", "P2"])
    assert Sentence(text="The insurer accepted the Golf claim.", passages=["P2"]).passages == ["P2"]
    with pytest.raises(ValidationError):
        Sentence(text="The insurer accepted the Golf claim.", passages=["P3"])
    with pytest.raises(ValidationError):
        Sentence(text="The insurer accepted the Golf claim.", passages=["m91cc4079e721"])
    items = Sentence.model_json_schema()["properties"]["passages"]["items"]
    assert items["enum"] == ["P1", "P2"]


def test_a_bare_yes_is_not_a_sentence():
    Sentence = prompts.sentence_model(["P1"])
    with pytest.raises(ValidationError):
        Sentence(text="Yes.", passages=["P1"])
    with pytest.raises(ValidationError):
        Sentence(text="The insurer accepted the Golf claim.", passages=[])


def test_a_list_of_refs_gets_the_same_reply_model_on_every_call():
    assert prompts.answer_model(["P1", "P2"], "PlannerAnswer") is prompts.answer_model(["P1", "P2"], "PlannerAnswer")
    assert prompts.sentence_model(["P1", "P2"]) is prompts.sentence_model(["P1", "P2"])
    other = prompts.answer_model(["P1", "P2", "P3"], "PlannerAnswer")
    sentence = other.model_json_schema()["$defs"]["AnswerSentence"]
    assert sentence["properties"]["passages"]["items"]["enum"] == ["P1", "P2", "P3"]
    assert prompts.answer_model(["P1", "P2"], "AnswerDraft").model_json_schema()["title"] == "AnswerDraft"


@pytest.mark.parametrize(
    ("written", "plain"),
    [
        ("Alice Martin from thread T1 stated that the damage happened in transport.",
         "Alice Martin stated that the damage happened in transport."),
        ("According to P2, the invoice is EUR 5.", "The invoice is EUR 5."),
        ("The invoice is EUR 5 (P2, P3).", "The invoice is EUR 5."),
        ("The meeting is in Terminal T1 at 10:00.", "The meeting is in Terminal T1 at 10:00."),  # not a label
        ("The code is T1000.", "The code is T1000."),
        ("2024-03-13 Wed, P2, P3, T1: 3 of 7", "2024-03-13 Wed"),  # the header's place copied too
        ("It was sent on 13 March (T1: 2 of 3, latest found).", "It was sent on 13 March."),
        ("Seats P1, P2 are booked.", "Seats P1, P2 are booked."),  # may be the mail's own
    ],
)
def test_the_prompts_labels_are_taken_out_of_a_sentence(written, plain):
    assert prompts.without_labels(written) == plain


def test_the_sentence_description_is_a_setting():
    model = prompts.answer_model(["P1"], "AnswerDraft", "One sentence with its passages.")
    assert model.model_json_schema()["$defs"]["AnswerSentence"]["description"] == "One sentence with its passages."


def test_the_request_names_everything_left_out():
    text = prompts.add_missing(PromptSettings(), ["time", "place"])
    assert "the time and the place" in text
    assert "unchanged" in text
