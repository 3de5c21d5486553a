"""Keyword scores are computed in the caller's scope: mail outside it, or quarantined
mail inside it, never moves them, so a score cannot reveal where else a term occurs."""

from __future__ import annotations

import base64

import pytest
from qdrant_client import QdrantClient

from pmsearch.services.searcher.index.base import Chunk, ChunkPayload, IndexFilter, MailIndex
from pmsearch.services.searcher.index.edge import EdgeIndex
from pmsearch.services.searcher.index.server import ServerIndex

DIM = 384
TERM = "quokkafarm"
SCOPE = IndexFilter(tenant_id="acme", mailboxes=("alice",))

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")


def chunk(key: str, mailbox: str, text: str, *, quarantined: bool = False) -> Chunk:
    payload = ChunkPayload(
        tenant_id="acme", mailbox=mailbox, message_id=f"m-{key}", rfc_message_id=f"{key}@x", thread_id=f"t-{key}",
        subject=key, normalized_subject=key, sender="a", sender_email="a@x", text=text, quarantined=quarantined,
    )
    return Chunk(payload=payload, dense=[1.0] + [0.0] * (DIM - 1))


IN_SCOPE = [
    chunk("a1", "alice", f"the {TERM} delivery is late"),
    chunk("a2", "alice", "lunch on friday at the ramen place"),
    chunk("a3", "alice", "budget review moves to thursday"),
]
OUTSIDE = [chunk(f"b{i}", "bob", f"{TERM} {TERM} notes number {i}") for i in range(5)] + [
    chunk(f"q{i}", "alice", f"{TERM} prize: click now {i}", quarantined=True) for i in range(5)
]


@pytest.fixture(params=["edge", "server"])
def index(request, tmp_path) -> MailIndex:
    idx = EdgeIndex(tmp_path / "edge", DIM) if request.param == "edge" else ServerIndex(
        QdrantClient(location=":memory:"), "mail", DIM
    )
    yield idx
    idx.close()


def scores(index: MailIndex, text: str) -> dict[str, float]:
    return {r.payload.message_id: r.score for r in index.query(SCOPE, mode="keyword", text=text, dense=None, limit=10)}


def test_mail_outside_the_scope_does_not_move_keyword_scores(index):
    index.upsert(IN_SCOPE)
    before = scores(index, f"{TERM} delivery")
    index.upsert(OUTSIDE)
    after = scores(index, f"{TERM} delivery")
    assert list(before) == ["m-a1"]
    assert after == pytest.approx(before, rel=1e-6)


def test_keyword_score_through_the_api_ignores_another_mailbox(api):
    """The attack as a caller runs it: bob watches his score while alice's mail changes."""
    mail = (
        "From: x@vendor.example\r\nTo: {to}@acme.example\r\nSubject: {subject}\r\n"
        "Message-ID: <{mid}@sec-scores.example>\r\nDate: Tue, 05 Mar 2024 10:00:00 +0000\r\n\r\n{body}\r\n"
    )

    def ingest(mailbox: str, mid: str, body: str) -> None:
        raw = mail.format(to=mailbox, subject=mid, mid=mid, body=body).encode()
        resp = api.http.post(
            "/v1/admin/ingest",
            json={"tenant_id": "acme", "mailbox": mailbox, "raw": [base64.b64encode(raw).decode()]},
            headers=api.admin_headers,
        )
        assert resp.status_code == 200 and resp.json()["indexed"] == 1, resp.text

    ingest("sec-scores-bob", "probe-bob", f"The {TERM} shipment arrived on time.")
    ingest("sec-scores-bob", "other-bob", "Nothing to see here, just lunch plans.")
    key = api.new_key(tenant_id="acme", principal="sec-scores", mailboxes=["sec-scores-bob"], permissions=["search"])

    def score() -> float:
        resp = api.search(key, query=TERM, mode="keyword", limit=5)
        assert resp.status_code == 200, resp.text
        [hit] = resp.json()["hits"]
        return hit["score"]

    before = score()
    for i in range(4):
        ingest("sec-scores-alice", f"secret-alice-{i}", f"Confidential: the {TERM} merger, note {i}.")
    assert score() == pytest.approx(before, rel=1e-6)
