"""Lookups (``pm:lookups``): a read-only tool call outside any run, as the gateway's MCP
``read_message`` sends it, answered by the searcher inside the signed scope only."""

from __future__ import annotations

import secrets
import time
import uuid

import httpx

from pmsearch.shared import streams
from pmsearch.shared.bus import encode
from pmsearch.shared.messages import LookupReplied, LookupRequested
from pmsearch.shared.scope import Scope, sign_scope


def _lookup(stack, token: str, tenant_id: str, message_id: str) -> LookupReplied:
    request_id = uuid.uuid4().hex
    req = LookupRequested(request_id=request_id, tenant_id=tenant_id, scope_token=token, deadline=time.time() + 30,
                          tool="read_message", arguments={"message_id": message_id})
    gateway = stack.redis_client("gateway")  # the only writer of pm:lookups
    gateway.xadd(streams.LOOKUPS, encode(req))
    popped = gateway.blpop([streams.reply_key(request_id)], timeout=15)
    assert popped is not None, "no reply from the searcher"
    return LookupReplied.model_validate_json(popped[1])


def _scope(tenant_id: str, *mailboxes: str) -> Scope:
    return Scope(tenant_id=tenant_id, principal="p", mailboxes=mailboxes, expires_at=time.time() + 60)


def _a_message_of_alice(api) -> str:
    found = api.search(api.key("acme/alice"), query="Golf claim", mode="keyword", limit=20).json()["hits"]
    return next(h["message_id"] for h in found if h["mailbox"] == "alice")


def test_a_lookup_with_a_forged_scope_reads_nothing(demo_stack, api):
    message_id = _a_message_of_alice(api)
    forged = sign_scope(_scope("acme", "alice"), secrets.token_urlsafe(32))
    reply = _lookup(demo_stack, forged, "acme", message_id)
    assert reply.outcome is None and reply.status == 403


def test_a_lookup_reads_only_inside_its_scope(demo_stack, api):
    message_id = _a_message_of_alice(api)
    key = demo_stack.secrets.scope_key
    inside = _lookup(demo_stack, sign_scope(_scope("acme", "alice"), key), "acme", message_id)
    outside = _lookup(demo_stack, sign_scope(_scope("acme", "bob"), key), "acme", message_id)
    assert inside.outcome.ok and inside.outcome.output.messages[0].message_id == message_id
    assert not outside.outcome.ok and outside.outcome.error_code == "not_found"


def test_a_direct_request_read_after_its_deadline_is_dropped_unanswered_and_counted(demo_stack):
    """The gateway gave up on it (and does not trim it away by age: the group's lag
    would count it for good), so the worker runtime acknowledges it without work."""
    token = sign_scope(_scope("acme", "alice"), demo_stack.secrets.scope_key)
    late, fresh = uuid.uuid4().hex, uuid.uuid4().hex
    gateway = demo_stack.redis_client("gateway")
    for request_id, deadline in ((late, time.time() - 1), (fresh, time.time() + 30)):
        req = LookupRequested(request_id=request_id, tenant_id="acme", scope_token=token, deadline=deadline,
                              tool="read_message", arguments={"message_id": "m-none"})
        gateway.xadd(streams.LOOKUPS, encode(req))
    assert gateway.blpop([streams.reply_key(fresh)], timeout=15) is not None
    assert gateway.blpop([streams.reply_key(late)], timeout=1) is None
    metrics = httpx.get(f"http://127.0.0.1:{demo_stack.metrics_ports['searcher']}/metrics", timeout=5).text
    assert 'pm_worker_dropped_total{reason="deadline_passed",stream="pm:lookups"}' in metrics
