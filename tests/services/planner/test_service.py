"""The planner's loop against a real redis-server and the scripted model: search the
question first, attempt an answer, search more only when the attempt found none."""

from __future__ import annotations

import re
import time
import uuid
from datetime import UTC, datetime

import pytest

from pmsearch.services.planner.repository import PlannerRepository
from pmsearch.services.planner.service import Planner
from pmsearch.shared import streams
from pmsearch.shared.bus import decode
from pmsearch.shared.llm import ModelClient
from pmsearch.shared.messages import (
    AnswerRequested,
    EvidenceMessage,
    Hit,
    HitsResult,
    RunRequested,
    ToolBatchCompleted,
    ToolBatchRequested,
    ToolOutcome,
    VerificationRequested,
)
from pmsearch.shared.scope import Scope, sign_scope
from pmsearch.testing.brains import (
    ATTEMPT,
    SEARCH,
    answer,
    choose,
    honest,
    nothing,
    of_kind,
    passages,
    read_thread,
    schema,
    schema_title,
    search,
    searches,
    sentence,
    user_text,
)
from pmsearch.testing.scripted_model import Reply
from tests.shared.llm.helpers import settings

QUESTION = "Did the insurer accept the Golf claim?"


def msg(mid: str, body: str, day: int, thread: str = "t-golf") -> EvidenceMessage:
    return EvidenceMessage(
        message_id=mid, tenant_id="acme", thread_id=thread, mailbox="alice", sender="Sabine Roth <sabine@northwind.example>",
        date=datetime(2024, 3, day, tzinfo=UTC), subject="Claim CLM-2024-55817", body=body,
    )


PHOTOS = msg("m-photos", "Attached are three photos of the damage to the VW Golf, taken this morning in our yard.", 13)
ACCEPT = msg("m-accept", "Northwind accepts the Golf claim and pays EUR 2,115.50 after the deductible.", 28)
SKODA = msg("m-skoda", "The Skoda Octavia claim from 2023 is closed.", 2, thread="t-skoda")


def hit(m: EvidenceMessage) -> Hit:
    return Hit(message_id=m.message_id, thread_id=m.thread_id, mailbox=m.mailbox, sender=m.sender, date=m.date,
               subject=m.subject, snippet=m.body[:40], score=1.0)


@pytest.fixture
async def planner(redis, scripted_model):
    model = ModelClient(settings(scripted_model.base_url, model_retries=0))
    yield Planner(PlannerRepository(redis), model)
    await model.aclose()


async def start(
    planner: Planner, *, strategy: str = "loop", max_steps: int = 3, deadline: float = 30, question: str = QUESTION,
    answer_style: str = "write",
) -> RunRequested:
    run_id = f"run-{uuid.uuid4().hex[:12]}"
    scope = Scope(tenant_id="acme", principal="alice", mailboxes=("alice", "shared-claims"), run_id=run_id, expires_at=time.time() + 60)
    req = RunRequested(
        run_id=run_id, tenant_id="acme", scope_token=sign_scope(scope, "test-key"), deadline=time.time() + deadline,
        question=question, max_steps=max_steps, max_seconds=deadline, started_at=time.time(), strategy=strategy,
        answer_style=answer_style,
    )
    await planner.start(req)
    return req


async def found(planner: Planner, req: RunRequested, step: int, *messages: EvidenceMessage, arguments: dict | None = None) -> None:
    """The searcher's reply to ``step``'s batch: ``messages`` found (and stored as evidence)."""
    if messages:
        await planner.repo.redis.hset(
            streams.evidence_key(req.run_id), mapping={m.message_id: m.model_dump_json() for m in messages}
        )
    outcome = ToolOutcome(
        call_id=f"s{step}-1", tool="search", arguments=arguments or {"query": QUESTION}, ok=True,
        message_ids=[m.message_id for m in messages], output=HitsResult(hits=[hit(m) for m in messages]),
    )
    await planner.observe(
        ToolBatchCompleted(
            run_id=req.run_id, tenant_id="acme", scope_token=req.scope_token, deadline=req.deadline, step=step,
            outcomes=[outcome],
        )
    )


async def published(redis, stream: str, model, run_id: str) -> list:
    entries = await redis.xrange(streams.partition(stream, run_id))
    return [m for m in (decode(f, model) for _, f in entries) if m.run_id == run_id]


async def tool_batches(redis, req: RunRequested) -> list[ToolBatchRequested]:
    return await published(redis, streams.TOOLS, ToolBatchRequested, req.run_id)


async def handed_to_answerer(redis, req: RunRequested) -> list[AnswerRequested]:
    return await published(redis, streams.ANSWERS, AnswerRequested, req.run_id)


async def ended(redis, req: RunRequested) -> VerificationRequested:
    (out,) = await published(redis, streams.DRAFTS_FROM_PLANNER, VerificationRequested, req.run_id)
    return out


# ---------------------------------------------------------------- the first search


async def test_a_run_starts_with_a_search_of_the_question_and_no_model_call(planner, redis, scripted_model):
    req = await start(planner)
    (batch,) = await tool_batches(redis, req)
    assert batch.step == 0
    (call,) = batch.calls
    assert (call.tool, call.arguments) == (
        "search", {"query": QUESTION, "mode": "hybrid", "limit": 8, "thread_latest": 1, "thread_neighbours": True}
    )
    assert scripted_model.bodies == []


async def test_single_shot_searches_without_thread_latest_and_goes_straight_to_the_answerer(planner, redis, scripted_model):
    req = await start(planner, strategy="single_shot")
    (batch,) = await tool_batches(redis, req)
    assert batch.calls[0].arguments["thread_latest"] == 0 and not batch.calls[0].arguments["thread_neighbours"]
    await found(planner, req, 0, PHOTOS, ACCEPT)
    (handed,) = await handed_to_answerer(redis, req)
    assert handed.carried is None and handed.proposed == []
    assert handed.focus == ["m-photos", "m-accept"]
    assert scripted_model.bodies == []


# ---------------------------------------------------------------- the answer attempt


async def test_an_attempt_that_answers_hands_the_answer_on_citing_message_ids(planner, redis, scripted_model):
    scripted_model.set_script(honest())
    req = await start(planner)
    await found(planner, req, 0, PHOTOS, ACCEPT)
    assert [schema_title(b) for b in scripted_model.bodies] == [ATTEMPT]
    (handed,) = await handed_to_answerer(redis, req)
    (s,) = handed.carried.sentences
    assert s.passages == ["P1"]  # as the model wrote it: the answerer reads it
    assert handed.carried.labels == {"P1": "m-photos", "P2": "m-accept"}
    (body,) = scripted_model.bodies
    assert f"CODE for this request: {handed.carried.fence}" in body["messages"][1]["content"]
    assert handed.usage.model_calls == 1 and handed.usage.steps == 1
    assert [t.kind for t in handed.trace.steps] == ["first_search", "decide"]
    assert handed.hits and handed.hits[0].message_id == "m-photos"


async def test_the_attempt_may_cite_only_the_passages_shown(planner, redis, scripted_model):
    scripted_model.set_script(honest())
    req = await start(planner)
    await found(planner, req, 0, PHOTOS, ACCEPT)
    (body,) = scripted_model.bodies
    items = schema(body)["$defs"]["AnswerSentence"]["properties"]["passages"]["items"]
    assert items["enum"] == [p.ref for p in passages(body)] == ["P1", "P2"]


async def test_an_invalid_attempt_costs_a_step_and_the_next_attempt_answers(planner, redis, scripted_model):
    tries = {"n": 0}

    def brain(body):
        tries["n"] += 1
        if tries["n"] <= 2:  # the reply and its repair round
            return answer(sentence("Northwind accepts the Golf claim in full.", "P9"))
        return honest()(body)

    scripted_model.set_script(brain)
    req = await start(planner)
    await found(planner, req, 0, PHOTOS, ACCEPT)
    (handed,) = await handed_to_answerer(redis, req)
    assert handed.usage.steps == 2 and handed.usage.model_calls == 3
    decides = [t for t in handed.trace.steps if t.kind == "decide"]
    assert decides[0].note.startswith("invalid model output") and decides[1].note == "answer"


async def test_an_unavailable_model_degrades_with_the_first_searchs_hits(planner, redis, scripted_model):
    scripted_model.set_script(lambda body: Reply(status=503, error="overloaded"))
    req = await start(planner)
    await found(planner, req, 0, PHOTOS, ACCEPT)
    out = await ended(redis, req)
    assert out.ending == "degraded"
    assert [h.message_id for h in out.hits] == ["m-photos", "m-accept"]


async def test_a_run_past_its_deadline_ends_without_a_model_call(planner, redis, scripted_model):
    req = await start(planner, deadline=-1)
    await found(planner, req, 0, PHOTOS)
    out = await ended(redis, req)
    assert out.ending == "budget_exhausted"
    assert scripted_model.bodies == []


async def test_a_duplicate_observation_is_taken_once(planner, redis, scripted_model):
    scripted_model.set_script(honest())
    req = await start(planner)
    await found(planner, req, 0, PHOTOS, ACCEPT)
    await found(planner, req, 0, PHOTOS, ACCEPT)
    assert len(scripted_model.bodies) == 1
    assert len(await handed_to_answerer(redis, req)) == 1


# ---------------------------------------------------------------- the extract style


def choosing(pick):
    """An extract-style attempt choosing ``pick(labelled sentences shown)``."""

    def brain(body):
        if schema_title(body) == SEARCH:
            return searches()
        shown = re.findall(r"^(S\d+) (.*)$", user_text(body), re.M)
        return choose(*pick(shown))

    return brain


async def test_an_extract_attempt_shows_labelled_sentences_and_may_choose_only_those(planner, redis, scripted_model):
    scripted_model.set_script(choosing(lambda shown: [label for label, text in shown if "accepts" in text]))
    req = await start(planner, answer_style="extract")
    await found(planner, req, 0, PHOTOS, ACCEPT)
    (body,) = scripted_model.bodies
    assert schema_title(body) == "PlannerChoice"
    labels = re.findall(r"^(S\d+) ", user_text(body), re.M)
    assert schema(body)["properties"]["sentences"]["items"]["enum"] == labels == ["S1", "S2"]
    (handed,) = await handed_to_answerer(redis, req)
    assert handed.carried is None and handed.answer_style == "extract"
    assert [(s.message_id, s.text) for s in handed.chosen.sentences] == [("m-accept", ACCEPT.body)]
    decide = next(t for t in handed.trace.steps if t.kind == "decide")
    assert decide.note.startswith("answer: chose S2 (coverage ")


async def test_an_extract_attempt_choosing_nothing_on_its_last_step_ends_the_run_unanswered(planner, redis, scripted_model):
    scripted_model.set_script(choosing(lambda shown: []))
    req = await start(planner, answer_style="extract", max_steps=1)
    await found(planner, req, 0, PHOTOS, ACCEPT)
    out = await ended(redis, req)
    assert out.ending == "insufficient_evidence"
    assert await handed_to_answerer(redis, req) == []


async def test_a_choice_holding_too_little_of_the_question_is_no_answer(redis, scripted_model):
    model = ModelClient(settings(scripted_model.base_url, model_retries=0))
    strict = Planner(PlannerRepository(redis), model, min_coverage=0.9)
    scripted_model.set_script(choosing(lambda shown: [label for label, text in shown if "photos" in text]))
    req = await start(strict, answer_style="extract", max_steps=1)
    await found(strict, req, 0, PHOTOS, ACCEPT)
    out = await ended(redis, req)
    assert out.ending == "insufficient_evidence"
    decide = next(t for t in out.trace.steps if t.kind == "decide")
    assert decide.note.startswith("no answer: chose S1 (coverage ") and decide.note.endswith("under 0.90")
    await model.aclose()


# ---------------------------------------------------------------- the search round


def searching(*calls: dict):
    """No answer in any attempt; the search round asks for ``calls``."""
    return lambda body: searches(*calls) if schema_title(body) == SEARCH else answer()


async def test_an_attempt_without_an_answer_is_followed_by_a_search_round(planner, redis, scripted_model):
    scripted_model.set_script(searching(search("Golf claim decision", mode="keyword"), read_thread("T1")))
    req = await start(planner)
    await found(planner, req, 0, PHOTOS, SKODA, ACCEPT)
    assert [schema_title(b) for b in scripted_model.bodies] == [ATTEMPT, SEARCH]
    batch = (await tool_batches(redis, req))[-1]
    assert batch.step == 1
    assert [(c.call_id, c.tool) for c in batch.calls] == [("s1-1", "search"), ("s1-2", "read_thread")]
    assert batch.calls[0].arguments["query"] == "Golf claim decision"
    assert batch.calls[1].arguments["thread_id"] == "t-golf"  # T1, as the model named it


async def test_the_calls_of_a_search_round_are_traced_under_it_not_under_the_attempt(planner, redis, scripted_model):
    scripted_model.set_script(searching(search("Skoda claim")))
    req = await start(planner)
    await found(planner, req, 0, PHOTOS)
    await found(planner, req, 1, SKODA, arguments={"query": "Skoda claim"})
    steps = (await planner.repo.load(req.run_id)).trace.steps
    step_one = [(t.kind, [o.call_id for o in t.tool_calls]) for t in steps if t.step == 1]
    assert step_one == [("decide", []), ("search", ["s1-1"])]


async def test_the_search_schema_names_only_the_threads_shown_and_nothing_beyond_the_scope(planner, redis, scripted_model):
    scripted_model.set_script(searching())
    req = await start(planner)
    await found(planner, req, 0, PHOTOS, SKODA)
    (body,) = of_kind(scripted_model.bodies, SEARCH)
    defs = schema(body)["$defs"]
    assert defs["read_thread_arguments"]["properties"]["thread_id"]["enum"] == ["T1", "T2"]
    search_args = defs["search_arguments"]
    assert search_args["additionalProperties"] is False and "tenant_id" not in search_args["properties"]
    if "mailboxes" in search_args["properties"]:
        assert set(search_args["properties"]["mailboxes"]["anyOf"][0]["items"]["enum"]) <= {"alice", "shared-claims"}


async def test_filters_the_question_never_mentioned_are_dropped_and_the_next_attempt_is_told(planner, redis, scripted_model):
    scripted_model.set_script(searching(search("Golf claim decision", senders=["your_email@example.com"])))
    req = await start(planner)
    await found(planner, req, 0, PHOTOS)
    batch = (await tool_batches(redis, req))[-1]
    assert "senders" not in batch.calls[0].arguments
    await found(planner, req, 1, ACCEPT, arguments=batch.calls[0].arguments)
    last_attempt = of_kind(scripted_model.bodies, ATTEMPT)[-1]
    assert "- dropped filters the question never mentioned: senders" in user_text(last_attempt)


async def test_a_search_round_asking_for_nothing_ends_the_run_as_insufficient_evidence(planner, redis, scripted_model):
    scripted_model.set_script(nothing)
    req = await start(planner)
    await found(planner, req, 0, PHOTOS)
    out = await ended(redis, req)
    assert out.ending == "insufficient_evidence"
    assert out.reason == "the model found nothing more to search"


async def test_a_search_round_repeating_a_search_already_made_ends_the_run(planner, redis, scripted_model):
    again = search(QUESTION, mode="hybrid", limit=8, thread_latest=1)
    scripted_model.set_script(searching(again))
    req = await start(planner)
    await found(planner, req, 0, PHOTOS, arguments=dict(again["arguments"]))
    out = await ended(redis, req)
    assert out.ending == "insufficient_evidence"
    assert len(await tool_batches(redis, req)) == 1


async def test_an_invalid_search_round_ends_the_run(planner, redis, scripted_model):
    scripted_model.set_script(searching(search("insurance claim", tenant_id="globex")))
    req = await start(planner)
    await found(planner, req, 0, PHOTOS)
    out = await ended(redis, req)
    assert out.ending == "insufficient_evidence"
    assert out.reason.startswith("invalid model output")
    assert len(await tool_batches(redis, req)) == 1


async def test_the_last_attempt_gets_no_search_round(planner, redis, scripted_model):
    scripted_model.set_script(searching(search("Golf claim decision")))
    req = await start(planner, max_steps=1)
    await found(planner, req, 0, PHOTOS)
    assert [schema_title(b) for b in scripted_model.bodies] == [ATTEMPT]
    out = await ended(redis, req)
    assert out.ending == "insufficient_evidence"
    assert out.usage.steps == 1


async def test_what_a_search_round_found_is_shown_first(planner, redis, scripted_model):
    scripted_model.set_script(searching(search("Skoda claim")))
    req = await start(planner)
    await found(planner, req, 0, PHOTOS, ACCEPT)
    await found(planner, req, 1, SKODA, arguments={"query": "Skoda claim"})
    shown = passages(of_kind(scripted_model.bodies, ATTEMPT)[-1])
    assert "Skoda Octavia" in shown[0].text and shown[0].thread == "T1"


async def test_a_search_emptied_only_by_its_filters_gives_its_step_back_once(planner, redis, scripted_model):
    scripted_model.set_script(searching(search("Golf claim decision")))
    req = await start(planner, max_steps=2)
    await found(planner, req, 0, PHOTOS)
    await found(planner, req, 1, arguments={"query": "Golf claim decision", "senders": ["sabine@northwind.example"]})
    # The step was given back: a second search round is offered before the last attempt.
    assert [schema_title(b) for b in scripted_model.bodies] == [ATTEMPT, SEARCH, ATTEMPT, SEARCH]
    assert "the step was given back" in user_text(of_kind(scripted_model.bodies, ATTEMPT)[-1])


async def test_a_first_search_that_finds_nothing_ends_the_run_without_a_model_call(planner, redis, scripted_model):
    req = await start(planner)
    await found(planner, req, 0)
    out = await ended(redis, req)
    assert out.ending == "insufficient_evidence"
    assert out.reason == "nothing in the caller's mail matches the question"
    assert scripted_model.bodies == []
