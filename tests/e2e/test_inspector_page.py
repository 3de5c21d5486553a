"""The run inspector page in a real headless Chromium against the real stack: steps
arrive while the run is going, then the verified answer with its excerpts marked in
their source; a hostile mail is shown as text and nothing in it runs.

With ``PM_UPDATE_SCREENSHOTS=1`` the tests also write docs/inspector-live.png and
docs/inspector-answer.png (the README links them)."""

from __future__ import annotations

import base64
import os
import time
from pathlib import Path

import pytest

from pmsearch.shared import streams
from pmsearch.shared.messages import RemovedSentence, RunMeta, RunResult, Trace, WidenAttempt
from pmsearch.testing.brains import ATTEMPT, answer, honest, honest_answer, passages, schema_title, sentence, user_text
from pmsearch.testing.scripted_model import Reply
from tests.fixtures.browser import browser, page  # noqa: F401

DOCS = Path(__file__).resolve().parents[2] / "docs"
QUESTION = "Did the insurer accept the Golf claim after we sent the photos?"
MODEL_SECONDS = 2.0  # each model call's latency: the page is open while the run goes on


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def slow(brain, seconds: float):
    def reply(body: dict) -> Reply:
        return brain(body).model_copy(update={"delay": seconds})

    return reply


def searching_then_answering(body: dict) -> Reply:
    """One search round, then an answer: a sentence quoting the first passage and one
    whose quote no passage holds (the verifier removes it)."""
    if schema_title(body) == ATTEMPT and "Searched so far:" in user_text(body):
        first = passages(body)[0].ref
        # It names the question's subject, so the answerer hands it on and the verifier
        # is the one to remove it.
        invented = sentence('The insurer wrote about the Golf claim: "we refuse every claim without exception".', first)
        return answer(*honest_answer(body), invented)
    return honest(search_query=lambda q: "Northwind accepted the Golf claim")(body)


def screenshot(page, name: str) -> None:
    if os.environ.get("PM_UPDATE_SCREENSHOTS") == "1":
        page.screenshot(path=str(DOCS / name), full_page=True)


def start_run(api, key: str, question: str) -> str:
    """Start an agentic run and leave it running: its id, from the stream's headers."""
    with api.http.stream(
        "POST", "/v1/search", json={"query": question, "mode": "agentic"},
        headers={**bearer(key), "Accept": "text/event-stream"},
    ) as resp:
        assert resp.status_code == 200
        return resp.headers["x-run-id"]


def sign_in(page, api, run_id: str, key: str) -> None:
    page.goto(f"{api.stack.gateway_url}/runs/{run_id}")
    page.fill("#key", key)
    page.click("#login-form button[type=submit]")


@pytest.fixture(autouse=True)
def _budgets(api, stack_model):
    budgets = {"search.agentic_max_steps": 4, "search.agentic_max_seconds": 30, "search.agentic_daily_cap": 500}
    api.tenant("acme", **budgets)
    stack_model.reset()


@pytest.fixture
def dialogs(page) -> list[str]:
    """The page's dialogs (alert, confirm, prompt), dismissed and recorded; its
    Content-Security-Policy violations are recorded in ``window.__violations``."""
    seen: list[str] = []
    page.on("dialog", lambda d: (seen.append(d.message), d.dismiss()))
    page.add_init_script(
        "window.__violations = [];"
        "document.addEventListener('securitypolicyviolation', e => window.__violations.push(e.violatedDirective));"
    )
    return seen


def test_page_shows_steps_as_they_arrive_then_the_answer_with_excerpts_in_their_source(api, stack_model, page, dialogs):
    stack_model.set_script(slow(searching_then_answering, MODEL_SECONDS))
    key = api.key("acme/alice")
    run_id = start_run(api, key, QUESTION)
    sign_in(page, api, run_id, key)

    page.wait_for_selector("#steps li.live")
    assert page.text_content("#status") == "running"
    seen = page.locator("#steps li.live").count()
    # More steps arrive over the stream before the run has finished.
    page.wait_for_function(
        "n => document.querySelectorAll('#steps li.live').length > n && !document.body.dataset.finished", arg=seen
    )
    assert page.locator("#evidence .card").count() > 0
    screenshot(page, "inspector-live.png")

    page.wait_for_selector("body[data-finished=true]", timeout=60_000)
    result = api.http.get(f"/v1/runs/{run_id}", headers=bearer(key)).json()
    assert result["outcome"] == "answered", result["reason"]
    assert page.text_content("#outcome") == "answered"
    # The made-up claim goes, for its invented quote or for words its source never uses
    # (which rule catches it first depends on which passage the search ranked first).
    removed = result["trace"]["removed_sentences"]
    assert [r["reason"] for r in removed] in (["quote_not_found"], ["off_question"])
    assert page.locator("#removed .reason-code").all_text_contents() == [r["reason"] for r in removed]
    assert "we refuse every claim without exception" in page.text_content("#removed")
    sentences = result["answer"]["sentences"]
    assert page.locator("#answer .sentence-text").all_text_contents() == [s["text"] for s in sentences]
    excerpts = [c["excerpt"]["text"] for s in sentences for c in s["citations"]]
    assert page.locator("#answer .source mark").all_text_contents() == excerpts
    for source, excerpt in zip(page.locator("#answer .source").all_text_contents(), excerpts):
        assert excerpt in source and len(source) > len(excerpt)  # marked in its source, not alone
    assert page.text_content("#steps-used") == str(result["usage"]["steps"])
    assert page.text_content("#steps-max") == "4"
    assert page.text_content("#seconds-max") == "30"
    searched = page.text_content("#steps")
    assert "Northwind accepted the Golf claim" in searched and '"query"' in searched
    assert page.locator("#evidence .card").count() == len(result["evidence"])
    screenshot(page, "inspector-answer.png")
    assert dialogs == [] and page.evaluate("window.__violations") == []


HOSTILE = b"""From: "Mallory <script>window.__pwned='sender'</script>" <mallory@evil.example>
To: inspector@acme.example
Subject: Zanzibarite report <img src=x onerror="window.__pwned='subject'; alert('subject')">
Date: Tue, 05 Mar 2024 09:00:00 +0000
Message-ID: <inspector-hostile-1@evil.example>
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8

The zanzibarite report figures are final for the quarter.
<script>window.__pwned = 'script'; alert('script')</script>
<img src=x onerror="window.__pwned='img'; alert('img')">
&lt;img src=x onerror=alert('entity')&gt; &#60;script&#62;alert('numeric')&#60;/script&#62;
<svg onload="window.__pwned='svg'">zanzibarite</svg>
"""


def test_hostile_mail_is_rendered_as_text_and_nothing_in_it_runs(api, stack_model, page, dialogs):
    mailbox = "sec-inspector"
    ingest = api.http.post(
        "/v1/admin/ingest",
        json={"tenant_id": "acme", "mailbox": mailbox, "raw": [base64.b64encode(HOSTILE).decode()]},
        headers=api.admin_headers,
    )
    assert ingest.status_code == 200, ingest.text
    key = api.new_key(tenant_id="acme", principal="sec-inspector", mailboxes=[mailbox], permissions=["search:agentic"])
    stack_model.set_script(honest())
    resp = api.search(key, query="What do the zanzibarite report figures say?", mode="agentic")
    assert resp.status_code == 200 and resp.json()["outcome"] == "answered", resp.text

    sign_in(page, api, resp.headers["x-run-id"], key)
    page.wait_for_selector("body[data-finished=true]")
    page.wait_for_timeout(300)  # time for anything that would run late (an image's onerror)

    card = page.text_content("#evidence .card")
    assert "Zanzibarite report <img src=x onerror=" in card
    assert "Mallory <script>window.__pwned='sender'</script>" in card
    source = page.text_content("#answer .source")
    assert "<script>window.__pwned = 'script'; alert('script')</script>" in source
    assert "<img src=x onerror=\"window.__pwned='img'; alert('img')\">" in source
    # Entity-encoded tags stay as the sender wrote them: decoded neither into tags nor twice.
    assert "&lt;img src=x onerror=alert('entity')&gt; &#60;script&#62;" in source
    assert dialogs == []
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.scripts.length") == 1
    assert page.locator("img, svg, iframe, object, embed").count() == 0
    assert page.evaluate("window.__violations") == []  # escaping did it, not the policy


def test_admin_view_of_a_stored_run_shows_its_widen_attempts_and_removed_sentences(api, demo_stack, page, dialogs):
    """Widen attempts cannot come from the model (the reply schemas cannot express
    one); a run's stored record shows how the page reports them."""
    run_id = "inspector-stored-1"
    now = time.time()
    meta = RunMeta(
        run_id=run_id, tenant_id="acme", principal="alice@acme.example", question="Where is the <b>June</b> invoice?",
        scope_token="t", created_at=now - 8, deadline=now + 22, max_steps=4, mailboxes=["alice"],
    )
    trace = Trace(
        removed_sentences=[
            RemovedSentence(text="The invoice is <i>paid</i>.", reason="off_question", offending="june"),
        ],
        widen_attempts=[
            WidenAttempt(
                step=1, tool="search", call_id="s1-1", reason="scope_violation",
                detail="mailbox bob is outside the scope",
            ),
        ],
    )
    result = RunResult(
        run_id=run_id, tenant_id="acme", outcome="insufficient_evidence", question=meta.question, trace=trace,
        reason="all_sentences_removed", model_note="<script>window.__pwned='note'</script>", finished_at=now,
    )
    with demo_stack.redis_client() as r:
        r.set(streams.meta_key(run_id), meta.model_dump_json(), ex=600)
        r.set(streams.final_key(run_id), result.model_dump_json(), ex=600)
    sign_in(page, api, run_id, demo_stack.secrets.admin_token)
    page.wait_for_selector("body[data-finished=true]")

    assert page.text_content("#view-label").startswith("Admin view · tenant acme")
    assert page.text_content("#question") == "Where is the <b>June</b> invoice?"
    assert page.locator("#widen .reason-code").all_text_contents() == ["scope_violation"]
    assert "mailbox bob is outside the scope" in page.text_content("#widen")
    assert page.locator("#removed .reason-code").all_text_contents() == ["off_question"]
    assert "The invoice is <i>paid</i>." in page.text_content("#removed")
    assert page.text_content("#reason .reason-code") == "all_sentences_removed"
    assert page.text_content("#model-note").endswith("<script>window.__pwned='note'</script>")
    assert page.is_hidden("#answer-section")
    assert dialogs == [] and page.evaluate("window.__pwned") is None
