"""Run administration against the real stack (every stage a process, the scripted
model): the run list with its filters and pages, cancelling a run through the verifier,
a tenant's cap use, and what a finished run keeps for its retention."""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest

from pmsearch.shared import streams
from pmsearch.shared.bus import decode
from pmsearch.shared.messages import ProgressEvent
from pmsearch.testing.brains import honest
from pmsearch.testing.scripted_model import Reply

QUESTION = "Did the insurer accept the Golf claim after we sent the photos?"
BUDGETS = {"search.agentic_max_steps": 4, "search.agentic_max_seconds": 20, "search.agentic_daily_cap": 500}
PROBLEM = "application/problem+json"
SLOW_SECONDS = 3.0  # each model reply of a run meant to be cancelled while it waits


@pytest.fixture(autouse=True)
def _budgets(api, stack_model):
    api.tenant("acme", **BUDGETS)
    stack_model.set_script(honest())
    yield
    stack_model.reset()


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def new_principal(api) -> tuple[str, str]:
    principal = f"admin-runs-{uuid.uuid4().hex[:8]}"
    key = api.new_key(tenant_id="acme", principal=principal, mailboxes=["alice", "shared-claims"])
    return principal, key


def finished_run(api, key: str) -> dict:
    resp = api.search(key, query=QUESTION, mode="agentic")
    assert resp.status_code == 200, resp.text
    return resp.json()


def list_runs(api, **params) -> dict:
    resp = api.http.get("/v1/admin/runs", params=params, headers=api.admin_headers)
    assert resp.status_code == 200, resp.text
    return resp.json()


def slow(body: dict) -> Reply:
    reply = honest()(body)
    return reply.model_copy(update={"delay": SLOW_SECONDS})


class StreamedRun:
    """An agentic run streamed in a thread; ``events`` fills as they arrive."""

    def __init__(self, api, key: str) -> None:
        self.api, self.key = api, key
        self.run_id: str | None = None
        self.events: list[dict] = []
        self.started = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        assert self.started.wait(30), "the run did not start"

    def _read(self) -> None:
        with self.api.http.stream(
            "POST", "/v1/search", json={"query": QUESTION, "mode": "agentic"},
            headers={**bearer(self.key), "Accept": "text/event-stream"},
        ) as resp:
            self.run_id = resp.headers.get("x-run-id")
            self.started.set()
            current: dict = {}
            for line in resp.iter_lines():
                if line.startswith(":"):
                    continue
                if not line:
                    if current:
                        self.events.append(current)
                    current = {}
                    continue
                field, _, value = line.partition(":")
                current[field] = value.strip()

    def done(self, timeout: float = 60) -> list[dict]:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the stream did not end"
        return [e for e in self.events if e.get("event") == "done"]


def progress_dones(demo_stack, run_id: str) -> int:
    entries = demo_stack.redis_client().xrange(streams.progress_key(run_id))
    return sum(decode(fields, ProgressEvent).event == "done" for _, fields in entries)


# ---------------------------------------------------------------- the list


def test_the_list_pages_a_principals_runs_newest_first(api):
    principal, key = new_principal(api)
    ids = [finished_run(api, key)["run_id"] for _ in range(3)]
    first = list_runs(api, principal=principal, limit=2)
    assert [r["run_id"] for r in first["runs"]] == ids[::-1][:2]
    assert first["next_cursor"]
    second = list_runs(api, principal=principal, limit=2, cursor=first["next_cursor"])
    assert [r["run_id"] for r in second["runs"]] == [ids[0]]
    assert second["next_cursor"] is None
    run = first["runs"][0]
    assert (run["tenant_id"], run["principal"]) == ("acme", principal)
    assert (run["status"], run["outcome"]) == ("finished", "answered")
    assert run["question"] == QUESTION and run["finished_at"] >= run["created_at"]


def test_the_list_filters_by_tenant_outcome_and_start_time(api):
    principal, key = new_principal(api)
    older = finished_run(api, key)["run_id"]
    between = time.time()
    newer = finished_run(api, key)["run_id"]
    ids = lambda **p: [r["run_id"] for r in list_runs(api, principal=principal, **p)["runs"]]  # noqa: E731
    assert ids(outcome="answered") == [newer, older]
    assert ids(outcome="degraded") == [] and ids(outcome="running") == []
    assert ids(since=between) == [newer]
    assert ids(until=between) == [older]
    assert ids(tenant_id="acme") == [newer, older]
    assert ids(tenant_id="globex") == []


def test_the_list_needs_the_admin_token(api):
    resp = api.http.get("/v1/admin/runs", headers=bearer(api.key("acme/alice")))
    assert resp.status_code == 401 and resp.headers["content-type"].startswith(PROBLEM)


@pytest.mark.parametrize("params", [{"cursor": "not-a-cursor"}, {"outcome": "won"}, {"limit": 0}])
def test_a_bad_list_parameter_is_a_422_problem(api, params):
    resp = api.http.get("/v1/admin/runs", params=params, headers=api.admin_headers)
    assert resp.status_code == 422 and resp.headers["content-type"].startswith(PROBLEM)


def test_the_admin_sees_any_run_with_its_result(api):
    run = finished_run(api, api.key("acme/alice"))
    resp = api.http.get(f"/v1/admin/runs/{run['run_id']}", headers=api.admin_headers)
    assert resp.status_code == 200
    assert resp.json()["result"] == run and resp.json()["run"]["outcome"] == "answered"
    assert api.http.get("/v1/admin/runs/nosuchrun", headers=api.admin_headers).status_code == 404


# ---------------------------------------------------------------- cancelling


def test_cancelling_ends_the_run_once_through_the_verifier(api, demo_stack, stack_model):
    stack_model.set_script(slow)
    _, key = new_principal(api)
    streamed = StreamedRun(api, key)
    resp = api.http.delete(f"/v1/runs/{streamed.run_id}", headers=bearer(key))
    assert resp.status_code == 200, resp.text
    assert (resp.json()["outcome"], resp.json()["reason"]) == ("cancelled", "cancelled")
    (done,) = streamed.done()
    assert json.loads(done["data"])["outcome"] == "cancelled"
    time.sleep(SLOW_SECONDS + 1)  # the model call the run was waiting on comes back
    again = api.http.get(f"/v1/runs/{streamed.run_id}", headers=bearer(key)).json()
    assert again == resp.json()
    assert progress_dones(demo_stack, streamed.run_id) == 1
    listed = list_runs(api, outcome="cancelled", limit=200)["runs"]
    assert streamed.run_id in [r["run_id"] for r in listed]


def test_cancelling_a_finished_run_is_a_409_problem(api):
    key = api.key("acme/alice")
    run = finished_run(api, key)
    resp = api.http.delete(f"/v1/runs/{run['run_id']}", headers=bearer(key))
    assert resp.status_code == 409 and resp.headers["content-type"].startswith(PROBLEM)
    assert resp.json()["code"] == "conflict"
    assert api.http.get(f"/v1/runs/{run['run_id']}", headers=bearer(key)).json()["outcome"] == "answered"


def test_an_administrator_cancels_any_tenants_run_once(api, demo_stack, stack_model):
    stack_model.set_script(slow)
    _, key = new_principal(api)
    streamed = StreamedRun(api, key)
    assert api.http.delete(f"/v1/admin/runs/{streamed.run_id}", headers=bearer(key)).status_code in (401, 403)
    resp = api.http.delete(f"/v1/admin/runs/{streamed.run_id}", headers=api.admin_headers)
    assert resp.status_code == 200, resp.text
    assert (resp.json()["outcome"], resp.json()["reason"]) == ("cancelled", "cancelled")
    (done,) = streamed.done()
    assert json.loads(done["data"])["outcome"] == "cancelled"
    assert progress_dones(demo_stack, streamed.run_id) == 1
    again = api.http.delete(f"/v1/admin/runs/{streamed.run_id}", headers=api.admin_headers)
    assert again.status_code == 409 and again.headers["content-type"].startswith(PROBLEM)
    assert api.http.delete("/v1/admin/runs/nosuchrun", headers=api.admin_headers).status_code == 404


def test_another_principal_cannot_cancel_a_run_it_cannot_read(api):
    run = finished_run(api, api.key("acme/alice"))
    for key in (api.key("acme/bob"), api.key("globex/carol")):
        resp = api.http.delete(f"/v1/runs/{run['run_id']}", headers=bearer(key))
        assert resp.status_code == 404 and resp.headers["content-type"].startswith(PROBLEM)
    assert api.http.delete("/v1/runs/nosuchrun", headers=bearer(api.key("acme/alice"))).status_code == 404


def test_a_stage_cannot_cancel_a_run_its_owner_did_not(api, demo_stack, stack_model):
    """The verifier refuses a ``cancelled`` ending for a run the gateway did not mark."""
    from pmsearch.shared.bus import encode
    from pmsearch.shared.messages import RunMeta, VerificationRequested

    stack_model.set_script(slow)
    _, key = new_principal(api)
    streamed = StreamedRun(api, key)
    meta = RunMeta.model_validate_json(demo_stack.redis_client().get(streams.meta_key(streamed.run_id)))
    forged = VerificationRequested(
        run_id=meta.run_id, tenant_id=meta.tenant_id, scope_token=meta.scope_token, deadline=meta.deadline,
        question=meta.question, ending="cancelled",
    )
    demo_stack.redis_client("planner").xadd(streams.DRAFTS_FROM_PLANNER, encode(forged))
    (done,) = streamed.done()
    assert json.loads(done["data"])["outcome"] == "answered"


# ---------------------------------------------------------------- usage and retention


def test_usage_counts_todays_runs_against_the_cap(api):
    before = api.http.get("/v1/admin/tenants/acme/usage", headers=api.admin_headers).json()
    finished_run(api, api.key("acme/alice"))
    after = api.http.get("/v1/admin/tenants/acme/usage", headers=api.admin_headers).json()
    assert after["runs_used"] == before["runs_used"] + 1
    assert after["daily_cap"] == 500 and after["remaining"] == 500 - after["runs_used"]
    assert after["budgets"]["search.agentic_max_steps"] == 4
    assert after["day"] == time.strftime("%Y-%m-%d", time.gmtime())
    assert api.http.get("/v1/admin/tenants/acme/usage", headers=bearer(api.key("acme/alice"))).status_code == 401


def test_a_finished_run_is_kept_for_the_retention_and_its_bodies_expire_early(api, demo_stack):
    run_id = finished_run(api, api.key("acme/alice"))["run_id"]
    admin = demo_stack.redis_client()
    day = 86_400
    for key in (streams.final_key(run_id), streams.meta_key(run_id)):
        assert 29 * day < admin.ttl(key) <= 30 * day, key
    assert 0 < admin.ttl(streams.evidence_key(run_id)) < 3600
