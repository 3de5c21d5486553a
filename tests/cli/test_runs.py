"""``pmsearch runs list|show|cancel`` as a subprocess against the real stack."""

from __future__ import annotations

import threading
import uuid

import pytest

from pmsearch.testing.brains import honest
from tests.cli.test_cli import pmsearch

QUESTION = "Did the insurer accept the Golf claim after we sent the photos?"
BUDGETS = {"search.agentic_max_steps": 4, "search.agentic_max_seconds": 20, "search.agentic_daily_cap": 500}


@pytest.fixture(autouse=True)
def _budgets(api, stack_model):
    api.tenant("acme", **BUDGETS)
    stack_model.set_script(honest())
    yield
    stack_model.reset()


def new_key(api) -> tuple[str, str]:
    principal = f"cli-runs-{uuid.uuid4().hex[:8]}"
    return principal, api.new_key(tenant_id="acme", principal=principal, mailboxes=["alice", "shared-claims"])


def finished(api, key: str) -> str:
    resp = api.search(key, query=QUESTION, mode="agentic")
    assert resp.status_code == 200, resp.text
    return resp.json()["run_id"]


def test_list_prints_one_line_per_run_newest_first(api, demo_stack):
    principal, key = new_key(api)
    ids = [finished(api, key) for _ in range(2)]
    run = pmsearch(demo_stack, "runs", "list", "--principal", principal)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert [ln.split()[0] for ln in lines] == ids[::-1]
    assert all(f"acme/{principal}" in ln and "answered" in ln and QUESTION in ln for ln in lines)


def test_list_follows_every_page_with_all(api, demo_stack):
    principal, key = new_key(api)
    ids = [finished(api, key) for _ in range(3)]
    paged = pmsearch(demo_stack, "runs", "list", "--principal", principal, "--limit", "2")
    assert paged.stdout.splitlines()[-1].startswith("more: --cursor ")
    every = pmsearch(demo_stack, "runs", "list", "--principal", principal, "--limit", "2", "--all")
    assert [ln.split()[0] for ln in every.stdout.splitlines()] == ids[::-1]


def test_show_prints_the_outcome_and_answer_as_admin_or_owner(api, demo_stack):
    _, key = new_key(api)
    run_id = finished(api, key)
    for extra in ((), ("--key", key)):
        shown = pmsearch(demo_stack, "runs", "show", run_id, *extra)
        assert shown.returncode == 0, shown.stderr
        assert "outcome: answered" in shown.stdout and "answer: " in shown.stdout


@pytest.mark.parametrize("as_admin", [False, True], ids=["owner", "admin"])
def test_cancel_ends_a_running_run(api, demo_stack, stack_model, as_admin):
    stack_model.set_script(lambda body: honest()(body).model_copy(update={"delay": 3.0}))
    _, key = new_key(api)
    started: dict[str, str] = {}
    ready = threading.Event()

    def stream() -> None:
        with api.http.stream(
            "POST", "/v1/search", json={"query": QUESTION, "mode": "agentic"},
            headers={"Authorization": f"Bearer {key}", "Accept": "text/event-stream"},
        ) as resp:
            started["run_id"] = resp.headers["x-run-id"]
            ready.set()
            for _ in resp.iter_lines():
                pass

    reader = threading.Thread(target=stream, daemon=True)
    reader.start()
    assert ready.wait(30)
    if as_admin:
        run = pmsearch(demo_stack, "runs", "cancel", "--admin", started["run_id"])
    else:
        run = pmsearch(demo_stack, "runs", "cancel", started["run_id"], key=key)
    reader.join(60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"cancelled run {started['run_id']}"
    shown = pmsearch(demo_stack, "runs", "show", started["run_id"])
    assert "outcome: cancelled (cancelled)" in shown.stdout


@pytest.mark.parametrize(
    "args,message",
    [
        (("runs", "cancel", "{finished}"), "409"),
        (("runs", "cancel", "nosuchrun"), "404"),
        (("runs", "show", "nosuchrun"), "404"),
        (("runs", "list", "--cursor", "garbage"), "422"),
        (("runs", "list", "--url", "http://127.0.0.1:9"), "cannot reach the gateway"),
    ],
)
def test_errors_are_one_readable_line_and_a_non_zero_exit(api, demo_stack, args, message):
    key = api.key("acme/alice")
    run_id = finished(api, key) if "{finished}" in args else ""
    run = pmsearch(demo_stack, *(a.replace("{finished}", run_id) for a in args), key=key)
    assert run.returncode != 0
    assert "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and message in run.stderr, run.stderr


def test_cancel_without_a_key_says_so(demo_stack):
    run = pmsearch(demo_stack, "runs", "cancel", "anyrun")
    assert run.returncode == 1 and "no API key" in run.stderr
