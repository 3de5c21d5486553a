"""The read-only tools inside a scope, run directly against a real Qdrant Edge index of
the demo mailbox and the real embedding model."""

from __future__ import annotations

import time

import pytest

from services.searcher.embedding import LocalEmbedder
from services.searcher.index.edge import EdgeIndex
from services.searcher.ingest.readers import demo_mailboxes, read_path
from services.searcher.ingest.service import Ingester
from services.searcher.repository import ScopedMailRepository
from services.searcher.schemas import TOOLS
from services.searcher.service import ToolRunner
from shared.messages import ToolCall
from shared.scope import Scope
from tests.fixtures.stack import DEMO

ALICE = Scope(tenant_id="acme", principal="alice", mailboxes=("alice", "shared-claims"), expires_at=time.time() + 3600)
DECISION = "Decision on claim CLM-2024-55817 (VW Golf M-AC 4821)"
CAROL = Scope(tenant_id="globex", principal="carol", mailboxes=("carol",), expires_at=time.time() + 3600)


@pytest.fixture(scope="module")
def runner(tmp_path_factory) -> ToolRunner:
    embedder = LocalEmbedder()
    index = EdgeIndex(tmp_path_factory.mktemp("edge"), dim=embedder.dim)
    ingester = Ingester(index, embedder, 1200)
    for tenant, mailbox, path in demo_mailboxes(DEMO):
        report = ingester.ingest(tenant, mailbox, [(r.raw, r.folder, r.label) for r in read_path(path)])
        assert report.error == 0, report.errors
    return ToolRunner(ScopedMailRepository(index, embedder))


def call(runner: ToolRunner, scope: Scope, tool: str, **arguments):
    return runner.run(scope, ToolCall(call_id="c", tool=tool, arguments=arguments))


def first_id(runner, scope, subject) -> str:
    """The id of the message with this subject, found by searching for it."""
    run = call(runner, scope, "search", query=subject, mode="keyword", limit=20)
    return next(h["message_id"] for h in run.outcome.output if h["subject"] == subject)


def test_every_tool_schema_forbids_extra_properties():
    for model in TOOLS.values():
        assert model.model_json_schema()["additionalProperties"] is False


def test_tenant_a_never_sees_tenant_b_in_any_tool(runner):
    golf = first_id(runner, ALICE, DECISION)
    golf_thread = call(runner, ALICE, "read_message", message_id=golf).outcome.output["thread_id"]
    for tool, args in [
        ("search", {"query": "Golf claim CLM-2024-55817"}),
        ("read_message", {"message_id": golf}),
        ("read_thread", {"thread_id": golf_thread}),
        ("read_attachment_text", {"message_id": golf}),
        ("find_related", {"message_id": golf}),
        ("contacts", {"query": "northwind"}),
    ]:
        run = call(runner, CAROL, tool, **args)
        if run.outcome.ok:
            assert all(m.tenant_id == "globex" for m in run.evidence), tool
            assert "Northwind" not in str(run.outcome.output), tool
        else:
            assert run.outcome.error_code == "not_found", tool


def test_narrowed_mailbox_returns_only_that_mailbox(runner):
    run = call(runner, ALICE, "search", query="claim", mailboxes=["shared-claims"], limit=20)
    assert run.outcome.ok and {m.mailbox for m in run.evidence} == {"shared-claims"}


def test_mailbox_outside_scope_is_refused_as_widen_attempt(runner):
    run = call(runner, ALICE, "search", query="invoice", mailboxes=["alice", "bob"])
    assert not run.outcome.ok and run.outcome.widen_attempt
    assert "bob" in run.outcome.error
    assert run.evidence == []


@pytest.mark.parametrize("extra", [{"tenant_id": "globex"}, {"include_quarantined": True}, {"all_tenants": True}])
def test_unknown_property_is_refused_as_widen_attempt(runner, extra):
    run = call(runner, ALICE, "search", query="invoice", **extra)
    assert not run.outcome.ok and run.outcome.widen_attempt


def test_invalid_argument_is_refused_but_not_a_widen_attempt(runner):
    run = call(runner, ALICE, "search", query="invoice", limit=5000)
    assert not run.outcome.ok and not run.outcome.widen_attempt
    assert run.outcome.error_code == "invalid_arguments"


def test_quarantined_mail_is_invisible_to_every_tool(runner):
    phishing = "Payout pending for claim CLM-2024-55817 - confirm your bank details"
    for tool, args in [
        ("search", {"query": phishing, "mode": "keyword", "limit": 50}),
        ("search", {"query": phishing, "mode": "semantic", "limit": 50}),
        ("search", {"query": phishing, "folders": ["Quarantine"]}),
        ("contacts", {"limit": 100}),
    ]:
        run = call(runner, ALICE, tool, **args)
        assert run.outcome.ok
        assert "confirm your bank details" not in str(run.outcome.output)
        assert all("bank details" not in m.subject for m in run.evidence)


def test_read_message_returns_the_stored_source(runner):
    mid = first_id(runner, ALICE, DECISION)
    run = call(runner, ALICE, "read_message", message_id=mid)
    body = run.evidence[0].body
    assert "2,115.50" in body
    assert body.count("Northwind Insurance AG") == run.outcome.output["body"].count("Northwind Insurance AG")


def test_read_thread_returns_the_whole_thread_oldest_first(runner):
    mid = first_id(runner, ALICE, DECISION)
    thread = call(runner, ALICE, "read_message", message_id=mid).outcome.output["thread_id"]
    run = call(runner, ALICE, "read_thread", thread_id=thread)
    dates = [m.date for m in run.evidence]
    assert len(dates) >= 3 and dates == sorted(dates)


def test_read_attachment_text_returns_pdf_text(runner):
    mid = first_id(runner, ALICE, DECISION)
    run = call(runner, ALICE, "read_attachment_text", message_id=mid)
    assert run.outcome.ok and any("2,115.50" in a["text"] for a in run.outcome.output)


def test_contacts_count_people_in_scope(runner):
    run = call(runner, ALICE, "contacts", query="northwind")
    assert run.outcome.ok and run.outcome.output
    assert all("northwind" in (c["address"] + c["name"]).lower() for c in run.outcome.output)
