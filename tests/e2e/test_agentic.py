"""Agentic search end to end: five services as processes on a real redis-server, the
gateway over HTTP, a scripted model that misbehaves on purpose."""

from __future__ import annotations

import json
import re
import time

import httpx
import pytest

from pmsearch.shared import streams
from pmsearch.shared.bus import encode
from pmsearch.shared.messages import EvidenceMessage, ToolBatchRequested, ToolCall
from pmsearch.shared.prompts import prompt_settings, system
from pmsearch.shared.scope import Scope, sign_scope
from pmsearch.shared.text.mail import own_text
from pmsearch.testing.brains import (
    ATTEMPT,
    DRAFT,
    SEARCH,
    answer,
    choose,
    code,
    evidence_block,
    honest,
    honest_answer,
    is_repair,
    knowing,
    nothing,
    of_kind,
    passage_refs_allowed,
    passages,
    phrase,
    quoting,
    schema,
    schema_title,
    search,
    searches,
    sentence,
    user_text,
)
from pmsearch.testing.scripted_model import Reply

QUESTION = "Did the insurer accept the Golf claim after we sent the photos?"


@pytest.fixture(autouse=True)
def fresh_budgets(api, stack_model):
    api.tenant("acme", **{"search.agentic_max_steps": 4, "search.agentic_max_seconds": 20, "search.agentic_daily_cap": 500,
                          "answer.style": "write"})
    stack_model.reset()
    yield


def agentic(api, key: str, question: str = QUESTION, headers: dict | None = None, **extra) -> httpx.Response:
    if headers is None:
        return api.search(key, query=question, mode="agentic", **extra)
    return api.http.post("/v1/search", json={"query": question, "mode": "agentic", **extra},
                         headers={"Authorization": f"Bearer {key}", **headers})


def evidence_ids(result: dict) -> set[str]:
    return {e["message_id"] for e in result["evidence"]}


def stored_evidence(stack, run_id: str) -> dict[str, EvidenceMessage]:
    with stack.redis_client() as r:
        raw = r.hgetall(streams.evidence_key(run_id))
    return {k.decode(): EvidenceMessage.model_validate_json(v) for k, v in raw.items()}


def step_notes(result: dict, kind: str) -> list[str | None]:
    return [s["note"] for s in result["trace"]["steps"] if s["kind"] == kind]


def first_only(title: str):
    """True for the first request of ``title``'s schema and its repair round, False after."""
    seen = {"n": 0}

    def first(body: dict) -> bool:
        if schema_title(body) != title:
            return False
        if not is_repair(body):
            seen["n"] += 1
        return seen["n"] == 1

    return first


# ---------------------------------------------------------------- the easy path


def test_easy_question_is_answered_right_with_exactly_one_model_call(api, stack_model):
    stack_model.set_script(knowing({QUESTION: ("accepted", "2,115.50")}))
    resp = agentic(api, api.key("acme/alice"))
    assert resp.status_code == 200, resp.text
    result = resp.json()
    assert result["outcome"] == "answered"
    assert "accepted" in result["answer"]["text"] and "2,115.50" in result["answer"]["text"]
    assert [schema_title(b) for b in stack_model.bodies] == [ATTEMPT]
    assert result["usage"]["model_calls"] == 1
    assert [s["kind"] for s in result["trace"]["steps"]] == ["first_search", "decide", "answer"]


def test_an_extract_style_answer_is_the_chosen_sentence_word_for_word(api, stack_model):
    api.tenant("acme", **{"answer.style": "extract"})

    def brain(body: dict) -> Reply:
        if schema_title(body) == SEARCH:
            return searches()
        shown = re.findall(r"^(S\d+) (.*)$", user_text(body), re.M)
        return choose(*[label for label, text in shown if "2,115.50" in text][:1])

    stack_model.set_script(brain)
    result = agentic(api, api.key("acme/alice")).json()
    assert result["outcome"] == "answered", result
    assert [schema_title(b) for b in stack_model.bodies] == ["PlannerChoice"]
    (chosen,) = [text for label, text in re.findall(r"^(S\d+) (.*)$", user_text(stack_model.bodies[0]), re.M)
                 if "2,115.50" in text][:1]
    answer_ = result["answer"]
    assert answer_["style"] == "extract"
    s = answer_["sentences"][0]  # code may add its source's details after it
    assert s["text"].endswith(f'"{chosen}"') and not result["trace"]["removed_sentences"]
    assert s["citations"][0]["excerpt"]["matched_quote"] is True


def test_a_write_or_extract_answer_with_a_wrong_amount_is_the_mails_sentence_it_was_made_from(api, stack_model):
    api.tenant("acme", **{"answer.style": "write_or_extract"})

    def brain(body: dict) -> Reply:
        if schema_title(body) == SEARCH:
            return searches()
        (ref,) = [p.ref for p in passages(body) if "2,115.50" in p.text][:1]
        # The small model's mistake: the right sentence read, a figure written wrong.
        return answer(sentence("The insurer accepted the Golf claim and will pay EUR 2,115.00.", ref))

    stack_model.set_script(brain)
    result = agentic(api, api.key("acme/alice")).json()
    assert result["outcome"] == "answered", result
    answer_ = result["answer"]
    assert answer_["style"] == "write_or_extract"
    first = answer_["sentences"][0]["text"]
    assert "2,115.50" in first and "2,115.00" not in answer_["text"]
    assert first.count('"') == 2 or "«" in first  # the mail's words, quoted
    assert answer_["sentences"][0]["citations"][0]["excerpt"]["matched_quote"] is True
    (removed,) = [r for r in result["trace"]["removed_sentences"] if r["replaced"]]
    assert removed["reason"] == "figure_not_found" and "2,115.00" in removed["offending"]


def test_answered_run_cites_only_retrieved_messages_with_copied_excerpts(api, stack_model):
    stack_model.set_script(honest())
    result = agentic(api, api.key("acme/alice")).json()
    assert result["outcome"] == "answered"
    kept = result["answer"]["sentences"]
    assert kept and not result["trace"]["removed_sentences"]
    for s in kept:
        for c in s["citations"]:
            assert c["message_id"] in evidence_ids(result)
            assert c["excerpt"]["matched_quote"] is True
            assert c["excerpt"]["text"]


def test_first_search_is_the_question_with_each_threads_latest_message(api, stack_model):
    stack_model.set_script(honest())
    result = agentic(api, api.key("acme/alice")).json()
    first = result["trace"]["searched"][0]
    assert first["tool"] == "search"
    assert first["arguments"]["query"] == QUESTION
    assert first["arguments"]["mode"] == "hybrid" and first["arguments"]["thread_latest"] == 1


def test_the_prompt_shows_passages_in_one_fenced_block_under_a_fixed_system_prompt(api, stack_model):
    stack_model.set_script(honest())
    agentic(api, api.key("acme/alice"))
    (body,) = stack_model.bodies
    assert body["messages"][0] == {"role": "system", "content": system(prompt_settings())}
    text = user_text(body)
    marker = code(body)
    assert text.startswith(f"CODE for this request: {marker}\n")
    assert text.count(marker) == 3  # the CODE line and the fence's two lines
    assert text.count("<<<UNTRUSTED") == 1 and text.count("<<<END_UNTRUSTED") == 1
    shown = passages(body)
    assert [p.ref for p in shown] == [f"P{i}" for i in range(1, len(shown) + 1)]
    assert all(p.thread.startswith("T") and p.text for p in shown)
    assert evidence_block(body).startswith("P1 | ")
    assert f"Question: {QUESTION}" in text.split(f"<<<END_UNTRUSTED {marker}>>>", 1)[1]


# ---------------------------------------------------------------- what the model may name


def test_the_answer_schema_allows_only_the_passages_shown(api, stack_model):
    stack_model.set_script(honest())
    agentic(api, api.key("acme/alice"))
    (body,) = stack_model.bodies
    assert passage_refs_allowed(body) == [p.ref for p in passages(body)]


@pytest.mark.parametrize("invented", ["P99", "m000000000000"])
def test_a_reply_citing_a_passage_it_was_not_shown_is_refused(api, stack_model, invented):
    """A provider that ignores the schema's enum: code validation refuses the reply, the
    attempt is made again, and no sentence of the refused reply reaches the answer."""
    first = first_only(ATTEMPT)

    def brain(body):
        if first(body):
            return answer(*honest_answer(body), sentence("The claim was paid out twice to Acme.", invented))
        return honest()(body)

    stack_model.set_script(brain)
    result = agentic(api, api.key("acme/alice")).json()
    assert step_notes(result, "decide")[0].startswith("invalid model output")
    assert result["outcome"] == "answered"
    texts = [s["text"] for s in result["answer"]["sentences"]]
    assert texts and all("twice" not in t for t in texts)
    assert all("twice" not in r["text"] for r in result["trace"]["removed_sentences"])
    for s in result["answer"]["sentences"]:
        assert {c["message_id"] for c in s["citations"]} <= evidence_ids(result)


def test_a_model_that_always_cites_unseen_passages_never_answers(api, stack_model):
    stack_model.set_script(lambda body: answer(sentence("The insurer accepted the Golf claim in full.", "P99")))
    api.tenant("acme", **{"search.agentic_max_steps": 2})
    result = agentic(api, api.key("acme/alice")).json()
    assert result["outcome"] == "budget_exhausted"
    assert result["answer"] is None
    notes = step_notes(result, "decide")
    assert len(notes) == 2 and all(n.startswith("invalid model output") for n in notes)
    assert result["evidence"]


@pytest.mark.parametrize(
    "echo",
    [
        {"text": "<one statement>", "passages": ["<message_id>"]},
        {"text": "<one statement>", "passages": ["P1"]},
        {"text": "<one short sentence answering the question>", "passages": ["<passage>"]},
        {"text": "<one short sentence answering the question>", "passages": ["P1"]},
        {"text": "<text of the sentence that answers>", "passages": ["P1"]},
    ],
    ids=["both", "text", "passages", "well_formed", "well_formed_few_words"],
)
def test_a_template_echo_is_never_an_answer(api, stack_model, echo):
    stack_model.set_script(lambda body: Reply(object={"answer": [echo]}) if schema_title(body) != SEARCH else searches())
    api.tenant("acme", **{"search.agentic_max_steps": 2})
    result = agentic(api, api.key("acme/alice")).json()
    assert result["outcome"] != "answered"
    assert result["answer"] is None


# ---------------------------------------------------------------- adversarial models


def test_forged_quote_is_removed_and_recorded(api, stack_model):
    stack_model.set_script(lambda body: answer(sentence('The insurer wrote "we reject this claim outright and forever".', "P1")))
    result = agentic(api, api.key("acme/alice")).json()
    assert result["outcome"] == "insufficient_evidence"
    assert result["answer"] is None
    assert [r["reason"] for r in result["trace"]["removed_sentences"]] == ["quote_not_found"]


def test_obeying_injected_mail_never_widens_the_scope(api, stack_model, demo_stack):
    """What an injected mail asks for (another tenant, other mailboxes, a tool the loop
    does not offer) is not in the search schema; a model that asks anyway is refused by
    validation, and nothing reaches the searcher."""

    def brain(body):
        if schema_title(body) == SEARCH:
            return searches(
                search("insurance claim", tenant_id="globex"),
                search("insurance claim", mailboxes=["carol", "bob"]),
                {"tool": "contacts", "arguments": {"include_quarantined": True}},
            )
        return answer()

    stack_model.set_script(brain)
    result = agentic(api, api.key("acme/alice")).json()
    (search_round,) = of_kind(stack_model.bodies, SEARCH)[:1]
    args = schema(search_round)["$defs"]["search_arguments"]
    assert args["additionalProperties"] is False and "tenant_id" not in args["properties"]
    if "mailboxes" in args["properties"]:  # offered or not, never beyond the caller's scope
        assert set(args["properties"]["mailboxes"]["anyOf"][0]["items"]["enum"]) <= {"alice", "shared-claims"}
    assert step_notes(result, "search")[0].startswith("invalid model output")
    assert [c["call_id"] for c in result["trace"]["searched"]] == ["s0-1"]
    assert result["trace"]["widen_attempts"] == []
    assert result["outcome"] == "insufficient_evidence"
    for msg in stored_evidence(demo_stack, result["run_id"]).values():
        assert msg.tenant_id == "acme" and msg.mailbox in ("alice", "shared-claims")


def test_model_that_never_stops_searching_ends_at_the_step_budget_with_evidence(api, stack_model):
    n = {"i": 0}

    def brain(body):
        if schema_title(body) == SEARCH:
            n["i"] += 1
            return searches(search(f"claim photos {n['i']}", mode="keyword"))
        return answer()

    stack_model.set_script(brain)
    api.tenant("acme", **{"search.agentic_max_steps": 3})
    result = agentic(api, api.key("acme/alice")).json()
    assert result["usage"]["steps"] == 3
    assert [schema_title(b) for b in stack_model.bodies] == [ATTEMPT, SEARCH, ATTEMPT, SEARCH, ATTEMPT]
    assert result["outcome"] == "insufficient_evidence"
    assert result["answer"] is None
    assert result["evidence"]


def test_hanging_model_ends_at_the_deadline(api, stack_model):
    stack_model.set_script(lambda body: Reply(hang=60))
    api.tenant("acme", **{"search.agentic_max_seconds": 3})
    started = time.monotonic()
    result = agentic(api, api.key("acme/alice")).json()
    took = time.monotonic() - started
    assert result["outcome"] == "budget_exhausted"
    assert result["evidence"], "the first search's evidence is kept"
    assert result["trace"]["steps"][0]["kind"] == "first_search"  # the planner's trace, not an empty one
    # The deadline and the watchdog's grace, with room for a busy machine: far short of
    # the model's 60 s hang, which is what a run without a deadline would wait.
    assert took < 3 + 1.5 + 15, took


def test_model_errors_degrade_to_hybrid_results(api, stack_model):
    stack_model.set_script(lambda body: Reply(status=503, error="overloaded"))
    result = agentic(api, api.key("acme/alice")).json()
    assert result["outcome"] == "degraded"
    assert result["answer"] is None
    assert result["hits"]
    time.sleep(1.0)  # the planner's circuit breaker is open now; let it reset (0.5 s here)


def test_unanswerable_question_is_never_answered(api, stack_model):
    def brain(body):
        if schema_title(body) == SEARCH and "Searched so far:" not in user_text(body):
            return searches(search("moon base budget"))
        return nothing(body)

    stack_model.set_script(brain)
    result = agentic(api, api.key("acme/alice"), question="What is the budget of our moon base?").json()
    assert result["outcome"] == "insufficient_evidence"
    assert result["answer"] is None
    assert [c["arguments"]["query"] for c in result["trace"]["searched"]][1:] == ["moon base budget"]


# ---------------------------------------------------------------- the loop's own behaviour


def test_filters_the_question_never_mentioned_are_dropped_before_the_searcher(api, stack_model):
    first = first_only(ATTEMPT)

    def brain(body):
        if schema_title(body) == SEARCH:
            return searches(search("Golf claim decision", senders=["your_email@example.com"]))
        return answer() if first(body) else honest()(body)

    stack_model.set_script(brain)
    result = agentic(api, api.key("acme/alice")).json()
    asked = [c["arguments"] for c in result["trace"]["searched"][1:]]
    assert [a["query"] for a in asked] == ["Golf claim decision"]
    assert "senders" not in asked[0]
    ran = [o for s in result["trace"]["steps"] if s["kind"] == "search" for o in s["tool_calls"]]
    assert [o["arguments"] for o in ran] == asked and ran[0]["message_ids"]
    second = of_kind(stack_model.bodies, ATTEMPT)[-1]
    assert "dropped filters the question never mentioned: senders" in user_text(second)
    assert result["outcome"] == "answered", (result["trace"]["removed_sentences"], user_text(second)[-1500:])


def test_single_shot_makes_one_answer_call_and_no_decision(api, stack_model):
    stack_model.set_script(honest())
    result = agentic(api, api.key("acme/alice"), strategy="single_shot").json()
    assert result["outcome"] == "answered"
    assert [schema_title(b) for b in stack_model.bodies] == [DRAFT]
    assert [s["kind"] for s in result["trace"]["steps"]] == ["first_search", "answer"]
    assert result["usage"]["model_calls"] == 1


def test_a_sentence_cited_to_the_wrong_passage_is_cited_to_the_message_that_states_it(api, stack_model, demo_stack):
    """The model quotes a later message of a thread and cites the thread's oldest one
    (which cannot contain it); code cites the message that says it."""
    said: dict[str, str] = {}

    def brain(body):
        shown = passages(body)
        thread = [p for p in shown if p.thread == shown[0].thread]
        wrong = min(thread, key=lambda p: p.place)
        quoted = max((p for p in thread if p.place > wrong.place), key=lambda p: len(phrase(p.text).split()))
        said["phrase"] = phrase(quoted.text)
        return answer(sentence(quoting(quoted), wrong.ref))

    stack_model.set_script(brain)
    result = agentic(api, api.key("acme/alice")).json()
    assert result["outcome"] == "answered"
    (answer_step,) = [s for s in result["trace"]["steps"] if s["kind"] == "answer"]
    by_model, by_code = answer_step["cited_by_model"], answer_step["cited_by_code"]
    assert by_model and by_code and by_model != by_code
    evidence = stored_evidence(demo_stack, result["run_id"])
    assert len(said["phrase"].split()) >= 5
    assert said["phrase"] not in evidence[by_model[0]].body
    assert said["phrase"] in own_text(evidence[by_code[0]].body)
    kept = result["answer"]["sentences"][0]  # then, maybe, its source's details (pmsearch/services/answerer/details.py)
    assert [c["message_id"] for c in kept["citations"]] == by_code
    assert kept["citations"][0]["excerpt"]["matched_quote"] is True


# ---------------------------------------------------------------- the API around the loop


def test_spent_cap_is_429_with_retry_after(api, stack_model):
    stack_model.set_script(honest())
    key = api.new_key(tenant_id="capped", principal="p", mailboxes=["x"], permissions=["search", "search:agentic"])
    api.tenant("capped", **{"search.agentic_daily_cap": 1})
    assert agentic(api, key).status_code == 200
    resp = agentic(api, key)
    assert resp.status_code == 429
    assert int(resp.headers["Retry-After"]) > 0
    assert resp.headers["content-type"].startswith("application/problem+json")


def _capped_key(api, tenant: str, cap: int) -> str:
    key = api.new_key(tenant_id=tenant, principal="p", mailboxes=["x"], permissions=["search", "search:agentic"])
    api.tenant(tenant, **{"search.agentic_daily_cap": cap})
    return key


def test_a_request_sent_again_with_its_idempotency_key_follows_the_first_run_and_pays_once(api, stack_model):
    stack_model.set_script(honest())
    key = _capped_key(api, "once", 1)  # a second run would be refused
    first = agentic(api, key, headers={"Idempotency-Key": "ask-1"})
    assert first.status_code == 200 and "idempotent-replayed" not in first.headers
    again = agentic(api, key, headers={"Idempotency-Key": "ask-1"})
    assert again.status_code == 200, again.text
    assert again.headers["idempotent-replayed"] == "true"
    assert again.headers["x-run-id"] == first.headers["x-run-id"] == again.json()["run_id"]
    assert again.json() == first.json()
    # Streamed, the same run replays from its first event to its one done.
    run_id, events = _sse(api, key, headers={"Idempotency-Key": "ask-1"}, body={"query": QUESTION, "mode": "agentic"})
    assert run_id == first.headers["x-run-id"]
    assert [e["event"] for e in events][0] == "step" and [e["event"] for e in events].count("done") == 1
    assert agentic(api, key, headers={"Idempotency-Key": "ask-2"}).status_code == 429  # a new key is a new run


def test_an_idempotency_key_sent_with_another_question_is_422(api, stack_model):
    stack_model.set_script(honest())
    key = api.key("acme/alice")
    assert agentic(api, key, headers={"Idempotency-Key": "reused"}).status_code == 200
    resp = agentic(api, key, question="Who is handling the Golf claim at the insurer?", headers={"Idempotency-Key": "reused"})
    assert resp.status_code == 422
    assert resp.json()["code"] == "idempotency_key_reused"


def test_a_refused_start_leaves_its_idempotency_key_free_for_the_retry(api, stack_model):
    stack_model.set_script(honest())
    key = _capped_key(api, "spent", 0)
    assert agentic(api, key, headers={"Idempotency-Key": "after-midnight"}).status_code == 429
    api.tenant("spent", **{"search.agentic_daily_cap": 5})
    resp = agentic(api, key, headers={"Idempotency-Key": "after-midnight"})
    assert resp.status_code == 200, resp.text
    assert "idempotent-replayed" not in resp.headers


def test_a_malformed_idempotency_key_is_400_and_starts_nothing(api, stack_model):
    key = api.key("acme/alice")
    resp = agentic(api, key, headers={"Idempotency-Key": "x" * 300})
    assert resp.status_code == 400
    assert resp.json()["code"] == "bad_header" and "Idempotency-Key" in resp.json()["detail"]
    assert stack_model.bodies == []


def test_agentic_needs_its_permission(api):
    key = api.new_key(tenant_id="acme", principal="reader", mailboxes=["alice"], permissions=["search"])
    resp = agentic(api, key)
    assert resp.status_code == 403
    assert "search:agentic" in resp.json()["detail"]


def _sse(api, key, headers=None, url="/v1/search", method="POST", body=None):
    events = []
    with api.http.stream(
        method, url, json=body, headers={"Authorization": f"Bearer {key}", "Accept": "text/event-stream", **(headers or {})}
    ) as resp:
        assert resp.status_code == 200
        run_id = resp.headers.get("x-run-id")
        current = {}
        for line in resp.iter_lines():
            if line.startswith(":"):
                continue
            if not line:
                if current:
                    events.append(current)
                    if current.get("event") == "done":
                        break
                current = {}
                continue
            field, _, value = line.partition(":")
            current[field] = value.strip()
    return run_id, events


def test_sse_streams_steps_evidence_answer_done_in_order_and_resumes(api, stack_model):
    stack_model.set_script(honest())
    key = api.key("acme/alice")
    run_id, events = _sse(api, key, body={"query": QUESTION, "mode": "agentic"})
    kinds = [e["event"] for e in events]
    assert kinds[0] == "step"
    assert "evidence" in kinds
    assert kinds[-2:] == ["answer", "done"]
    assert kinds.index("evidence") < kinds.index("answer")
    done = json.loads(events[-1]["data"])
    assert done["outcome"] == "answered" and done["run_id"] == run_id
    # Resume after the second event: the rest, and only the rest, arrives again (answer
    # and done come from the stored result and carry no id).
    _, again = _sse(api, key, url=f"/v1/runs/{run_id}/events", method="GET", headers={"Last-Event-ID": events[1]["id"]})
    assert [(e["event"], e.get("id")) for e in again] == [(e["event"], e.get("id")) for e in events[2:]]
    assert api.http.get(f"/v1/runs/{run_id}", headers={"Authorization": f"Bearer {key}"}).json()["outcome"] == "answered"


def test_runs_of_another_tenant_are_not_found(api, stack_model):
    stack_model.set_script(honest())
    result = agentic(api, api.key("acme/alice")).json()
    resp = api.http.get(f"/v1/runs/{result['run_id']}", headers={"Authorization": f"Bearer {api.key('globex/carol')}"})
    assert resp.status_code == 404


@pytest.mark.parametrize("forge", ["wrong_key", "widened"])
def test_forged_or_widened_scope_token_on_the_stream_is_refused(demo_stack, forge):
    run_id = f"forged-{forge}"
    scope = Scope(tenant_id="acme", principal="mallory", mailboxes=("alice",), run_id=run_id, expires_at=time.time() + 60)
    token = sign_scope(scope, "not-the-key" if forge == "wrong_key" else demo_stack.secrets.scope_key)
    if forge == "widened":
        body, _, mac = token.partition(".")
        token = sign_scope(scope.model_copy(update={"tenant_id": "globex", "mailboxes": ("carol",)}), "x").partition(".")[0] + "." + mac
    batch = ToolBatchRequested(
        run_id=run_id, tenant_id="globex" if forge == "widened" else "acme", scope_token=token, deadline=time.time() + 30,
        step=1, calls=[ToolCall(call_id="c1", tool="search", arguments={"query": "claim"})],
    )
    planner = demo_stack.redis_client("planner")  # the planner may write pm:tools
    planner.xadd(streams.TOOLS, encode(batch))
    admin = demo_stack.redis_client()
    deadline = time.time() + 10
    while time.time() < deadline:
        dead = [f for _, f in admin.xrange(streams.dead_letter(streams.TOOLS)) if f.get(b"run_id") == run_id.encode()]
        if dead:
            break
        time.sleep(0.1)
    assert dead and b"scope" in dead[0][b"error"]
    assert not admin.exists(streams.evidence_key(run_id))
    assert not [f for _, f in admin.xrange(streams.OBSERVATIONS) if run_id.encode() in f[b"__data__"]]


