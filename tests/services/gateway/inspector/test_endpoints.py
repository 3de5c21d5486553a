"""The run inspector's routes over HTTP, on the real stack: who sees a run, and what the
page is allowed to run. The page itself is tested in Chromium (tests/e2e/test_inspector_page.py)."""

from __future__ import annotations

import re

import pytest

from pmsearch.testing.brains import honest

QUESTION = "Did the insurer accept the Golf claim after we sent the photos?"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def run_id(api, stack_model) -> str:
    """A finished, answered run of acme/alice."""
    budgets = {"search.agentic_max_steps": 4, "search.agentic_max_seconds": 20, "search.agentic_daily_cap": 500}
    api.tenant("acme", **budgets)
    stack_model.reset()
    stack_model.set_script(honest())
    resp = api.search(api.key("acme/alice"), query=QUESTION, mode="agentic")
    assert resp.status_code == 200 and resp.json()["outcome"] == "answered", resp.text
    return resp.headers["x-run-id"]


def test_page_forbids_inline_script_other_origins_and_form_submission(api, run_id):
    resp = api.http.get(f"/runs/{run_id}")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/html")
    policy = resp.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy and "form-action 'none'" in policy
    scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", resp.text, re.S)
    assert scripts == [(' src="/inspector/static/inspector.js" defer', "")]
    assert QUESTION not in resp.text  # no run data without a key


def test_page_for_a_run_id_that_cannot_exist_is_a_problem_not_a_page(api):
    resp = api.http.get("/runs/%3Cscript%3E")
    assert resp.status_code == 404 and resp.headers["content-type"] == "application/problem+json"


def test_runs_own_key_sees_its_answer_with_excerpts_in_their_source(api, run_id):
    resp = api.http.get(f"/runs/{run_id}/data", headers=bearer(api.key("acme/alice")))
    assert resp.status_code == 200, resp.text
    view = resp.json()
    assert view["view"] == "owner" and view["status"] == "finished" and view["question"] == QUESTION
    assert view["max_steps"] == 4 and view["max_seconds"] == pytest.approx(20, abs=0.01)
    cited = [c for s in view["result"]["answer"]["sentences"] for c in s["citations"]]
    assert len(view["sources"]) == len(cited) > 0
    for ctx, citation in zip(view["sources"], cited):
        assert ctx["kept"] and ctx["text"] == citation["excerpt"]["text"]
        assert ctx["before"] or ctx["after"]


def test_other_principals_key_gets_the_404_of_a_run_that_does_not_exist(api, run_id):
    for path in (f"/runs/{run_id}/data", f"/runs/{run_id}/events"):
        resp = api.http.get(path, headers=bearer(api.key("acme/bob")))
        assert resp.status_code == 404, path
        missing = api.http.get(path.replace(run_id, "0" * 32), headers=bearer(api.key("acme/bob")))
        assert resp.json()["title"] == missing.json()["title"]


def test_data_without_a_key_is_401(api, run_id):
    resp = api.http.get(f"/runs/{run_id}/data")
    assert resp.status_code == 401 and resp.headers["www-authenticate"] == "Bearer"


def test_admin_token_sees_any_run_in_the_admin_view(api, run_id):
    view = api.http.get(f"/runs/{run_id}/data", headers=api.admin_headers).json()
    assert view["view"] == "admin" and view["tenant_id"] == "acme" and view["result"]["outcome"] == "answered"
    with api.http.stream("GET", f"/runs/{run_id}/events", headers=api.admin_headers) as events:
        assert events.status_code == 200
        body = events.read().decode()
    assert "event: done" in body
