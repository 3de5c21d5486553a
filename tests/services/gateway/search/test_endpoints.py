"""The HTTP API for keyword, semantic and hybrid search: gateway → Redis → searcher →
back, with every service a real process."""

from __future__ import annotations

import pytest

PROBLEM = "application/problem+json"
INVOICE = "INV-2024-0173"
PARAPHRASE = "compensation for the smashed hatchback"


def hits(resp) -> list[dict]:
    assert resp.status_code == 200, resp.text
    return resp.json()["hits"]


def test_missing_key_is_401_problem(api):
    resp = api.http.post("/v1/search", json={"query": "x"})
    assert resp.status_code == 401
    assert resp.headers["content-type"].startswith(PROBLEM)
    assert resp.headers["www-authenticate"] == "Bearer"
    assert resp.json()["code"] == "unauthorized"


def test_unknown_key_is_401(api):
    assert api.search("pk_not-a-real-key", query="x").status_code == 401


def test_key_without_search_permission_is_403(api):
    key = api.new_key(tenant_id="acme", principal="agent-only", mailboxes=["alice"], permissions=["search:agentic"])
    resp = api.search(key, query="invoice", mode="keyword")
    assert resp.status_code == 403
    assert "'search'" in resp.json()["detail"]


@pytest.mark.parametrize(
    "body,field",
    [
        ({"query": "x", "mode": "psychic"}, "mode"),
        ({"query": "x", "filters": {"tenant_id": "globex"}}, "filters.tenant_id"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": ""}, "query"),
        ({"query": "x", "filters": {"date_from": "yesterday"}}, "filters.date_from"),
    ],
)
def test_bad_request_is_422_naming_the_field(api, body, field):
    resp = api.search(api.key("acme/alice"), **body)
    assert resp.status_code == 422
    assert resp.headers["content-type"].startswith(PROBLEM)
    assert resp.json()["detail"].startswith(field)


def test_keyword_finds_an_exact_invoice_number_that_semantic_misses(api):
    key = api.key("acme/bob")
    keyword = hits(api.search(key, query=INVOICE, mode="keyword", limit=3))
    semantic = hits(api.search(key, query=INVOICE, mode="semantic", limit=1))
    assert f"<mark>{INVOICE}</mark>" in keyword[0]["snippet"]
    assert INVOICE not in semantic[0]["snippet"]


def test_semantic_finds_a_paraphrase_that_keyword_misses(api):
    key = api.key("acme/alice")
    assert hits(api.search(key, query=PARAPHRASE, mode="keyword")) == []
    semantic = hits(api.search(key, query=PARAPHRASE, mode="semantic", limit=3))
    assert any("Claim" in h["subject"] for h in semantic)


def test_hybrid_finds_both(api):
    exact = hits(api.search(api.key("acme/bob"), query=INVOICE, mode="hybrid", limit=3))
    assert INVOICE in exact[0]["snippet"]
    meaning = hits(api.search(api.key("acme/alice"), query=PARAPHRASE, mode="hybrid", limit=3))
    assert any("Claim" in h["subject"] for h in meaning)


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_tenant_never_sees_another_tenant(api, mode):
    for h in hits(api.search(api.key("globex/carol"), query="VW Golf claim CLM-2024-55817 " + INVOICE, mode=mode, limit=50)):
        assert h["mailbox"] == "carol"
    for h in hits(api.search(api.key("acme/alice"), query="Ford Transit hail damage Globex", mode=mode, limit=50)):
        assert h["mailbox"] in ("alice", "shared-claims")


def test_narrowed_mailbox_returns_only_that_mailbox(api):
    found = hits(api.search(api.key("acme/alice"), query="claim", mode="hybrid", limit=20, filters={"mailboxes": ["shared-claims"]}))
    assert found and {h["mailbox"] for h in found} == {"shared-claims"}


def test_widened_mailbox_is_refused(api):
    resp = api.search(api.key("acme/alice"), query="invoice", filters={"mailboxes": ["bob"]})
    assert resp.status_code == 403
    assert "bob" in resp.json()["detail"]


def quarantined_demo_mail() -> list[tuple[str, str, str]]:
    """(tenant, message id, subject) of every quarantined demo message."""
    from pmsearch.services.searcher.ingest.identity import content_digest
    from pmsearch.services.searcher.ingest.parser import parse_message
    from pmsearch.services.searcher.ingest.readers import demo_mailboxes, read_path
    from pmsearch.services.searcher.ingest.schemas import message_key
    from tests.fixtures.stack import DEMO

    found = []
    for tenant, _, path in demo_mailboxes(DEMO):
        for raw in read_path(path):
            msg = parse_message(raw.raw, folder=raw.folder)
            if msg.quarantined:
                found.append((tenant, message_key(tenant, msg.rfc_message_id, content_digest(raw.raw)), msg.subject))
    return found


QUARANTINED = quarantined_demo_mail()
LABEL = {"acme": "acme/alice", "globex": "globex/carol"}


def test_demo_has_quarantined_mail_to_hide():
    assert len(QUARANTINED) >= 3


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_quarantined_mail_never_appears_even_searched_by_its_own_subject(api, mode):
    for tenant, message_id, subject in QUARANTINED:
        found = hits(api.search(api.key(LABEL[tenant]), query=subject, mode=mode, limit=50))
        assert message_id not in {h["message_id"] for h in found}


def test_openapi_is_served(api):
    spec = api.http.get("/openapi.json").json()
    assert "/v1/search" in spec["paths"]
    assert api.http.get("/docs").status_code == 200
