"""The read-only tools inside a scope, run directly against a real Qdrant Edge index of
the demo mailbox and the real embedding model."""

from __future__ import annotations

import time

import pytest

from pmsearch.services.searcher.embedding import OnnxEmbedder
from pmsearch.services.searcher.index.edge import EdgeIndex
from pmsearch.services.searcher.ingest.readers import demo_mailboxes, read_path
from pmsearch.services.searcher.ingest.service import Ingester
from pmsearch.services.searcher.repository import ScopedMailRepository
from pmsearch.services.searcher.service import HANDLERS, ToolRunner
from pmsearch.shared.messages import ToolCall
from pmsearch.shared.scope import Scope
from pmsearch.shared.tools import TOOLS
from tests.fixtures.stack import DEMO

ALICE = Scope(tenant_id="acme", principal="alice", mailboxes=("alice", "shared-claims"), expires_at=time.time() + 3600)
DECISION = "Decision on claim CLM-2024-55817 (VW Golf M-AC 4821)"
CAROL = Scope(tenant_id="globex", principal="carol", mailboxes=("carol",), expires_at=time.time() + 3600)


@pytest.fixture(scope="module")
def runner(tmp_path_factory) -> ToolRunner:
    embedder = OnnxEmbedder()
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
    return next(h.message_id for h in run.outcome.output.hits if h.subject == subject)


def test_every_tool_has_one_handler():
    assert set(HANDLERS) == set(TOOLS)


def test_every_tool_schema_forbids_extra_properties():
    for spec in TOOLS.values():
        assert spec.args.model_json_schema()["additionalProperties"] is False


def test_tenant_a_never_sees_tenant_b_in_any_tool(runner):
    golf = first_id(runner, ALICE, DECISION)
    golf_thread = call(runner, ALICE, "read_message", message_id=golf).outcome.output.messages[0].thread_id
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
            assert "Northwind" not in run.outcome.output.model_dump_json(), tool
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
        assert "confirm your bank details" not in run.outcome.output.model_dump_json()
        assert all("bank details" not in m.subject for m in run.evidence)


def test_read_message_returns_the_stored_source(runner):
    mid = first_id(runner, ALICE, DECISION)
    run = call(runner, ALICE, "read_message", message_id=mid)
    body = run.evidence[0].body
    assert "2,115.50" in body
    assert run.outcome.output.kind == "messages"
    assert body.count("Northwind Insurance AG") == run.outcome.output.messages[0].body.count("Northwind Insurance AG")


def test_read_thread_returns_the_whole_thread_oldest_first(runner):
    mid = first_id(runner, ALICE, DECISION)
    thread = call(runner, ALICE, "read_message", message_id=mid).outcome.output.messages[0].thread_id
    run = call(runner, ALICE, "read_thread", thread_id=thread)
    dates = [m.date for m in run.evidence]
    assert len(dates) >= 3 and dates == sorted(dates)


def test_read_attachment_text_returns_pdf_text(runner):
    mid = first_id(runner, ALICE, DECISION)
    run = call(runner, ALICE, "read_attachment_text", message_id=mid)
    assert run.outcome.ok and any("2,115.50" in a.text for a in run.outcome.output.attachments)


def test_contacts_count_people_in_scope(runner):
    run = call(runner, ALICE, "contacts", query="northwind")
    contacts = run.outcome.output.contacts
    assert run.outcome.ok and contacts
    assert all("northwind" in (c.address + c.name).lower() for c in contacts)


def test_each_tool_returns_its_registered_result(runner):
    golf = first_id(runner, ALICE, DECISION)
    thread = call(runner, ALICE, "read_message", message_id=golf).outcome.output.messages[0].thread_id
    for tool, args in [
        ("search", {"query": "Golf claim"}),
        ("read_message", {"message_id": golf}),
        ("read_thread", {"thread_id": thread}),
        ("read_attachment_text", {"message_id": golf}),
        ("find_related", {"message_id": golf}),
        ("contacts", {"query": "northwind"}),
    ]:
        run = call(runner, ALICE, tool, **args)
        assert run.outcome.ok, (tool, run.outcome.error)
        assert isinstance(run.outcome.output, TOOLS[tool].result), tool


def test_hits_name_the_sender_and_survive_the_stream(runner):
    run = call(runner, ALICE, "search", query="Golf claim", limit=3)
    wire = run.outcome.model_dump(mode="json")
    assert all("sender" in h and "from" not in h for h in wire["output"]["hits"])
    assert type(run.outcome).model_validate_json(run.outcome.model_dump_json()) == run.outcome


def test_thread_latest_adds_the_newest_messages_of_the_hits_threads(runner):
    plain = call(runner, ALICE, "search", query=DECISION, mode="keyword", limit=1)
    run = call(runner, ALICE, "search", query=DECISION, mode="keyword", limit=1, thread_latest=2)
    assert plain.outcome.output.latest == []
    hits, latest = run.outcome.output.hits, run.outcome.output.latest
    assert hits == plain.outcome.output.hits
    hit = hits[0]
    thread = call(runner, ALICE, "read_thread", thread_id=hit.thread_id).outcome.output.messages
    newest = [m.message_id for m in thread[-2:] if m.message_id != hit.message_id]
    assert newest and [m.message_id for m in latest] == newest
    assert {m.thread_id for m in latest} == {hit.thread_id}
    # Evidence for the run, like the hits.
    assert set(newest) <= set(run.outcome.message_ids) and set(newest) <= {m.message_id for m in run.evidence}


def test_thread_neighbours_adds_the_messages_beside_each_hit_in_its_thread(runner):
    plain = call(runner, ALICE, "search", query=DECISION, mode="keyword", limit=1)
    run = call(runner, ALICE, "search", query=DECISION, mode="keyword", limit=1, thread_neighbours=True)
    hit = plain.outcome.output.hits[0]
    thread = [m.message_id for m in call(runner, ALICE, "read_thread", thread_id=hit.thread_id).outcome.output.messages]
    at = thread.index(hit.message_id)
    beside = [mid for mid in (thread[at - 1] if at else None, thread[at + 1] if at + 1 < len(thread) else None) if mid]
    assert beside
    assert [m.message_id for m in plain.evidence] == [hit.message_id]
    assert [m.message_id for m in run.evidence] == [hit.message_id, *beside]
    assert run.outcome.output.hits == plain.outcome.output.hits  # evidence only: the hits are the search's


def test_thread_neighbours_stay_in_scope(runner):
    run = call(runner, CAROL, "search", query="claim", limit=10, thread_neighbours=True)
    assert run.outcome.ok
    assert all(m.tenant_id == "globex" and m.mailbox == "carol" for m in run.evidence)


def test_thread_latest_stays_in_scope(runner):
    run = call(runner, CAROL, "search", query="claim", limit=10, thread_latest=5)
    assert run.outcome.ok
    assert all(m.tenant_id == "globex" for m in run.evidence)
    assert all(m.mailbox == "carol" for m in run.outcome.output.latest)
