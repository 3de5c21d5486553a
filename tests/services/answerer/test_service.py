"""The answerer against a real redis-server and the scripted model: it writes the draft
(or takes the planner's), attributes each sentence's sources, and always hands the
verifier an ending."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime

import pytest

from pmsearch.services.answerer.service import Answerer
from pmsearch.shared import passages as P
from pmsearch.shared import prompts, streams
from pmsearch.shared.bus import decode
from pmsearch.shared.fencing import Fence
from pmsearch.shared.llm import ModelClient
from pmsearch.shared.messages import (
    AnswerRequested,
    CarriedAnswer,
    CarriedChoice,
    CarriedSentence,
    ChosenSentence,
    DraftSentence,
    EvidenceMessage,
    Hit,
    Trace,
    Usage,
    VerificationRequested,
)
from pmsearch.testing.brains import DRAFT, answer, choose, honest, passages, quoting, schema, schema_title, sentence
from pmsearch.testing.scripted_model import Reply
from tests.shared.llm.helpers import settings

QUESTION = "Did the insurer accept the Golf claim?"


def msg(mid: str, body: str, day: int) -> EvidenceMessage:
    return EvidenceMessage(
        message_id=mid, tenant_id="acme", thread_id="t-golf", mailbox="alice", sender="Sabine Roth <sabine@northwind.example>",
        date=datetime(2024, 3, day, tzinfo=UTC), subject="Claim CLM-2024-55817", body=body,
    )


PHOTOS = msg("m-photos", "Attached are three photos of the damage to the VW Golf, taken this morning in our yard.", 13)
ACCEPT = msg("m-accept", "Northwind accepts the Golf claim and pays EUR 2,115.50 after the deductible.", 28)
HIT = Hit(message_id="m-photos", thread_id="t-golf", mailbox="alice", sender="s", date=None, subject="x", snippet="y", score=1.0)


@pytest.fixture
async def model(scripted_model):
    client = ModelClient(settings(scripted_model.base_url, model_retries=0))
    yield client
    await client.aclose()


async def run_with(redis, *evidence: EvidenceMessage) -> str:
    run_id = f"run-{uuid.uuid4().hex[:12]}"
    if evidence:
        await redis.hset(streams.evidence_key(run_id), mapping={m.message_id: m.model_dump_json() for m in evidence})
    return run_id


def request(
    run_id: str, proposed: list[DraftSentence] = (), focus: list[str] = ("m-photos", "m-accept"), question: str = QUESTION,
    carried: CarriedAnswer | None = None,
) -> AnswerRequested:
    return AnswerRequested(
        run_id=run_id, tenant_id="acme", scope_token="token", deadline=time.time() + 30, question=question, step=2,
        trace=Trace(), usage=Usage(steps=1, model_calls=1), focus=list(focus), hits=[HIT], proposed=list(proposed),
        carried=carried,
    )


def carrying(*sentences: tuple[str, str], notes: list[str] = ()) -> CarriedAnswer:
    """The planner's attempt's answer: (text, passage label) pairs, as the model wrote them."""
    return CarriedAnswer(sentences=[CarriedSentence(text=t, passages=[ref]) for t, ref in sentences],
                         labels={"P1": "m-photos", "P2": "m-accept"}, fence=Fence.new().marker, notes=list(notes))


async def handed_on(redis, run_id: str) -> VerificationRequested:
    found = [decode(f, VerificationRequested) for _, f in await redis.xrange(streams.partition(streams.DRAFTS_FROM_ANSWERER, run_id))]
    (req,) = [r for r in found if r.run_id == run_id]
    return req


# ---------------------------------------------------------------- the planner's answer


async def test_an_answer_the_planner_wrote_costs_no_model_call(redis, model, scripted_model):
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    proposed = [DraftSentence(text="Northwind accepts the Golf claim and pays EUR 2,115.50.", citations=["m-accept"])]
    await Answerer(redis, model).answer(request(run_id, proposed))
    out = await handed_on(redis, run_id)
    assert scripted_model.bodies == []
    assert out.ending == "answer"
    assert [(s.text, s.citations) for s in out.draft.sentences] == [(proposed[0].text, ["m-accept"])]
    assert out.usage.model_calls == 1  # the planner's, unchanged
    assert [s.kind for s in out.trace.steps] == ["answer"]


async def test_code_cites_the_message_that_states_a_sentence_and_the_trace_keeps_both_choices(redis, model):
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    proposed = [DraftSentence(text="Northwind accepts the Golf claim and pays EUR 2,115.50.", citations=["m-photos"])]
    await Answerer(redis, model).answer(request(run_id, proposed))
    out = await handed_on(redis, run_id)
    assert out.draft.sentences[0].citations == ["m-accept"]
    (step,) = out.trace.steps
    assert step.cited_by_model == ["m-photos"]
    assert step.cited_by_code == ["m-accept"]


async def test_with_citation_source_model_the_models_citations_are_kept(redis, model):
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    proposed = [DraftSentence(text="Northwind accepts the Golf claim and pays EUR 2,115.50.", citations=["m-photos"])]
    await Answerer(redis, model, citation_source="model").answer(request(run_id, proposed))
    out = await handed_on(redis, run_id)
    assert out.draft.sentences[0].citations == ["m-photos"]
    assert out.trace.steps[0].cited_by_code == ["m-accept"]  # still recorded, for evaluation


async def test_a_sentence_no_evidence_supports_goes_to_the_verifier_uncited(redis, model):
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    proposed = [DraftSentence(text="Zzyzx qwerty plugh xyzzy.", citations=["m-photos"])]
    await Answerer(redis, model).answer(request(run_id, proposed))
    out = await handed_on(redis, run_id)
    assert out.draft.sentences[0].citations == []  # the verifier removes it: no_citation
    assert out.trace.steps[0].cited_by_code == []


async def test_a_sentence_that_only_repeats_a_messages_header_is_dropped(redis, model):
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    proposed = [
        DraftSentence(text="Sabine Roth, Claim CLM-2024-55817", citations=["m-accept"]),
        DraftSentence(text="Northwind accepts the Golf claim and pays EUR 2,115.50.", citations=["m-accept"]),
    ]
    await Answerer(redis, model).answer(request(run_id, proposed))
    out = await handed_on(redis, run_id)
    assert [s.text for s in out.draft.sentences] == [proposed[1].text]
    assert "header" in out.trace.steps[0].note


# ---------------------------------------------------------------- the planner's carried answer

TWO_PARTS = "When did Northwind accept the Golf claim, and how much do they pay?"


def completing(second: str):
    """Asked to add what its answer left out, the model says ``second``."""

    def brain(body):
        assert "leaves out" in body["messages"][-1]["content"]
        return answer(sentence(second, "P2"))

    return brain


async def test_a_carried_answer_cites_the_messages_behind_its_passage_labels(redis, model, scripted_model):
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    carried = carrying(("Northwind accepts the Golf claim (P2).", "P2"))
    await Answerer(redis, model, citation_source="model").answer(request(run_id, carried=carried))
    out = await handed_on(redis, run_id)
    first = out.draft.sentences[0]
    assert (first.text, first.citations) == ("Northwind accepts the Golf claim.", ["m-accept"])
    assert scripted_model.bodies == [] and out.usage.model_calls == 1


async def test_a_carried_answer_leaving_out_a_part_is_completed_in_the_attempts_conversation(redis, model, scripted_model):
    scripted_model.set_script(completing("Northwind accepted the Golf claim on 28 March and pays EUR 2,115.50."))
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    carried = carrying(("Northwind accepted the Golf claim on 28 March.", "P2"), notes=["search {}: 2 message(s), 2 new"])
    await Answerer(redis, model, citation_source="model").answer(request(run_id, question=TWO_PARTS, carried=carried))
    (follow,) = scripted_model.bodies
    shown = P.build(TWO_PARTS, [PHOTOS, ACCEPT])
    attempt = prompts.answer_messages(prompts.PromptSettings(), TWO_PARTS, shown, Fence(marker=carried.fence), carried.notes)
    assert follow["messages"][:2] == attempt  # word for word: the server's cached prefix
    assert follow["messages"][2] == {"role": "assistant", "content": (
        '{"answer":[{"text":"Northwind accepted the Golf claim on 28 March.","passages":["P2"]}]}')}
    assert "the amount" in follow["messages"][3]["content"]
    out = await handed_on(redis, run_id)
    assert [s.text for s in out.draft.sentences][:1] == ["Northwind accepted the Golf claim on 28 March and pays EUR 2,115.50."]
    assert out.usage.model_calls == 2 and out.trace.steps[-1].model_usage.model_calls == 1


async def test_a_completion_that_adds_nothing_keeps_the_carried_answer(redis, model, scripted_model):
    scripted_model.set_script(completing("Northwind accepted the Golf claim in March."))
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    carried = carrying(("Northwind accepted the Golf claim on 28 March.", "P2"))
    await Answerer(redis, model).answer(request(run_id, question=TWO_PARTS, carried=carried))
    out = await handed_on(redis, run_id)
    assert out.draft.sentences[0].text == "Northwind accepted the Golf claim on 28 March."
    assert out.usage.model_calls == 2


async def test_a_carried_answer_giving_every_part_asked_for_takes_no_call(redis, model, scripted_model):
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    carried = carrying(("Northwind accepted the Golf claim on 28 March.", "P2"))
    await Answerer(redis, model).answer(request(run_id, question="When did Northwind accept the Golf claim?", carried=carried))
    assert scripted_model.bodies == []
    assert (await handed_on(redis, run_id)).ending == "answer"


async def test_a_carried_echo_of_the_template_is_no_answer_and_the_model_writes_one(redis, model, scripted_model):
    scripted_model.set_script(honest())
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    await Answerer(redis, model).answer(request(run_id, carried=carrying(("<one statement>", "P1"))))
    (body,) = scripted_model.bodies
    assert schema_title(body) == DRAFT
    assert (await handed_on(redis, run_id)).ending == "answer"


# ---------------------------------------------------------------- the answerer's own call


async def test_without_a_proposed_answer_the_model_writes_one_over_the_passages(redis, model, scripted_model):
    scripted_model.set_script(honest())
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    await Answerer(redis, model).answer(request(run_id))
    out = await handed_on(redis, run_id)
    (body,) = scripted_model.bodies
    assert schema_title(body) == DRAFT
    assert [p.ref for p in passages(body)] == ["P1", "P2"]
    assert out.ending == "answer"
    (s,) = out.draft.sentences
    assert s.citations == ["m-photos"]  # the first passage is the oldest message
    assert out.usage.model_calls == 2
    assert out.trace.steps[0].model_usage.model_calls == 1


async def test_passage_refs_in_the_reply_become_message_ids(redis, model, scripted_model):
    def brain(body):
        p2 = passages(body)[1]
        return answer(sentence(quoting(p2), "P2"))

    scripted_model.set_script(brain)
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    await Answerer(redis, model, citation_source="model").answer(request(run_id))
    out = await handed_on(redis, run_id)
    assert out.draft.sentences[0].citations == ["m-accept"]
    assert out.trace.steps[0].cited_by_model == ["m-accept"]


async def test_an_empty_answer_is_insufficient_evidence(redis, model, scripted_model):
    scripted_model.set_script(lambda body: answer())
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    await Answerer(redis, model).answer(request(run_id))
    out = await handed_on(redis, run_id)
    assert out.ending == "insufficient_evidence" and out.draft is None
    assert out.reason == "the model found that the mail does not answer this"


async def test_no_evidence_is_insufficient_evidence_without_a_model_call(redis, model, scripted_model):
    run_id = await run_with(redis)
    await Answerer(redis, model).answer(request(run_id, focus=[]))
    out = await handed_on(redis, run_id)
    assert out.ending == "insufficient_evidence"
    assert scripted_model.bodies == []


async def test_a_reply_citing_an_unseen_passage_is_refused_and_ends_without_an_answer(redis, model, scripted_model):
    scripted_model.set_script(lambda body: answer(sentence("Northwind accepts the Golf claim in full.", "P9")))
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    await Answerer(redis, model).answer(request(run_id))
    out = await handed_on(redis, run_id)
    assert len(scripted_model.bodies) == 2  # the reply and its repair round
    assert out.ending == "insufficient_evidence" and out.draft is None
    assert out.reason.startswith("invalid model output")


async def test_an_unavailable_model_degrades_with_the_questions_hits(redis, model, scripted_model):
    scripted_model.set_script(lambda body: Reply(status=503, error="overloaded"))
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    await Answerer(redis, model).answer(request(run_id))
    out = await handed_on(redis, run_id)
    assert out.ending == "degraded"
    assert out.hits == [HIT]
    assert out.reason.startswith("model unavailable")


@pytest.mark.parametrize(
    ("second", "kept"),
    [
        ("Attached are three photos taken this morning in our yard.", False),  # no word of the question
        ("Three photos of the VW Golf were taken this morning.", False),  # one word: padding
        ("Before that the insurer had the photos of the Golf claim.", True),  # the question's subject again
    ],
    ids=["unrelated", "one_shared_word", "restates_the_subject"],
)
async def test_a_second_sentence_stays_only_when_it_restates_what_the_question_is_about(redis, model, second, kept):
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    proposed = [
        DraftSentence(text="Northwind accepts the Golf claim and pays EUR 2,115.50.", citations=["m-accept"]),
        DraftSentence(text=second, citations=["m-photos"]),
    ]
    await Answerer(redis, model).answer(request(run_id, proposed))
    out = await handed_on(redis, run_id)
    assert [s.text for s in out.draft.sentences] == [p.text for p in proposed[: 2 if kept else 1]]
    assert ("dropped 1 sentence" in (out.trace.steps[-1].note or "")) is not kept


@pytest.mark.parametrize(
    ("question", "first", "second", "kept"),
    [
        (
            "What is the new expense app called and when is the training?",
            "The new expense app is called Spendly.",
            "The training is on 16 May at 10:00.",
            True,  # gives the "when" the first sentence left out
        ),
        (
            "What is the new expense app called and when is the training?",
            "The new expense app is called Spendly.",
            "Forklift training certificates were renewed.",
            False,  # shares a word, gives no part asked for
        ),
        (
            "Why is Northwind paying us less than the repair bill for the Golf?",
            "Northwind pays less than the repair bill because of a deductible.",
            "The deductible is EUR 225.00 under the fleet policy.",
            True,  # goes on with the first sentence's own subject, with a figure
        ),
        (
            "Why is Northwind paying us less than the repair bill for the Golf?",
            "Northwind pays less than the repair bill because of a deductible.",
            "The deductible was discussed with the broker.",
            False,  # the same subject, nothing checkable added
        ),
        (
            "When is my yoga class?",
            "The yoga course runs on Tuesdays at 18:30 from 7 May to 25 June, EUR 96 in all.",
            "A trip to Sylt costs EUR 240 from 3 to 7 June.",
            False,  # shares a month and a currency, not a subject
        ),
        (
            "Why is Northwind paying us less than the repair bill for the Golf?",
            "Northwind pays less than the repair bill because of a deductible.",
            "The deductible on claim CLM-2023-48810 was EUR 225.00.",
            False,  # another claim's code: another thing
        ),
    ],
    ids=[
        "adds_a_part_asked_for",
        "shares_a_word_only",
        "continues_with_a_figure",
        "continues_without_a_figure",
        "shares_a_month_only",
        "names_another_code",
    ],
)
async def test_a_second_sentence_stays_when_it_adds_what_was_asked(redis, model, question, first, second, kept):
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    proposed = [DraftSentence(text=first, citations=["m-accept"]), DraftSentence(text=second, citations=["m-photos"])]
    await Answerer(redis, model).answer(request(run_id, proposed, question=question))
    out = await handed_on(redis, run_id)
    written = {p.text for p in proposed}  # code's added details are not the model's sentences
    assert [s.text for s in out.draft.sentences if s.text in written] == [p.text for p in proposed[: 2 if kept else 1]]


async def test_a_sentence_written_twice_is_kept_once_with_both_citations(redis, model):
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    text = "Northwind accepts the Golf claim and pays EUR 2,115.50."
    proposed = [DraftSentence(text=text, citations=["m-accept"]), DraftSentence(text=text.upper(), citations=["m-photos"])]
    await Answerer(redis, model, citation_source="model").answer(request(run_id, proposed))
    out = await handed_on(redis, run_id)
    assert [(s.text, s.citations) for s in out.draft.sentences] == [(text, ["m-accept", "m-photos"])]
    assert "dropped" not in (out.trace.steps[-1].note or "")


async def test_another_messages_different_amount_is_added_to_the_draft(redis, model):
    corrected = msg("m-corrected", "Correction: for claim CLM-2024-55817 Northwind pays EUR 2,340.50, not less.", 29)
    run_id = await run_with(redis, PHOTOS, ACCEPT, corrected)
    question = "How much does Northwind pay on claim CLM-2024-55817?"
    proposed = [DraftSentence(text="Northwind pays EUR 2,115.50 after the deductible.", citations=["m-accept"])]
    await Answerer(redis, model).answer(request(run_id, proposed, focus=["m-accept", "m-corrected"], question=question))
    out = await handed_on(redis, run_id)
    assert [s.citations for s in out.draft.sentences] == [["m-accept"], ["m-corrected"]]
    assert out.draft.sentences[1].text.startswith('Sabine Roth, 29 March: "Correction: for claim CLM-2024-55817')
    assert "added 1 statement" in (out.trace.steps[-1].note or "")


# ---------------------------------------------------------------- the extract style


def extract_request(run_id: str, chosen: CarriedChoice | None = None) -> AnswerRequested:
    return request(run_id).model_copy(update={"chosen": chosen, "answer_style": "extract"})


async def test_chosen_sentences_become_the_mails_own_words_without_a_model_call(redis, model, scripted_model):
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    chosen = CarriedChoice(sentences=[ChosenSentence(message_id="m-accept", part="body", text=ACCEPT.body)])
    await Answerer(redis, model).answer(extract_request(run_id, chosen))
    out = await handed_on(redis, run_id)
    assert scripted_model.bodies == []
    assert out.draft.style == "extract"
    assert [(s.text, s.citations) for s in out.draft.sentences] == [(f'Sabine Roth, 28 March: "{ACCEPT.body}"', ["m-accept"])]


async def test_the_answerers_own_extract_call_offers_only_the_labels_shown(redis, model, scripted_model):
    scripted_model.set_script(lambda body: choose("S2"))
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    await Answerer(redis, model).answer(extract_request(run_id))
    (body,) = scripted_model.bodies
    assert schema_title(body) == "AnswerChoice"
    assert schema(body)["properties"]["sentences"]["items"]["enum"] == ["S1", "S2"]
    out = await handed_on(redis, run_id)
    assert [s.citations for s in out.draft.sentences] == [["m-accept"]] and out.draft.style == "extract"


async def test_an_empty_choice_ends_insufficient_evidence(redis, model, scripted_model):
    scripted_model.set_script(lambda body: choose())
    run_id = await run_with(redis, PHOTOS, ACCEPT)
    await Answerer(redis, model).answer(extract_request(run_id))
    out = await handed_on(redis, run_id)
    assert out.ending == "insufficient_evidence" and out.draft is None
