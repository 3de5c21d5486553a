"""The Edge adapter's kept term counts give the same keyword scores as Edge computing the
caller's IDF itself, through every kind of write, and count only the caller's mail."""

from __future__ import annotations

import pytest
import qdrant_edge as qe

from pmsearch.services.searcher.index import bm25, layout
from pmsearch.services.searcher.index.base import Chunk, IndexFilter, delivery_fields, delivery_key
from pmsearch.services.searcher.index.edge import EdgeIndex, edge_filter
from pmsearch.services.searcher.index.idf import ScopedIdf

from .conftest import ACME, BETA, DIM

SCOPES = [
    IndexFilter(tenant_id=ACME, mailboxes=("main", "shared")),
    IndexFilter(tenant_id=ACME, mailboxes=("main",)),
    IndexFilter(tenant_id=ACME, mailboxes=("shared",)),
    IndexFilter(tenant_id=BETA, mailboxes=("main",)),
]
TEXTS = ["INV-2024-0173", "invoice March", "insurer approved the claim", "budget review headcount", "the of and"]


def edge_scores(idx: EdgeIndex, flt: IndexFilter, text: str) -> dict[str, float]:
    """Scores with the IDF Edge computes over the corpus filter itself (the reference)."""
    indices, values = bm25.query_vector(text)
    if not indices:
        return {}
    request = qe.QueryRequest(
        limit=50,
        query=qe.Query.Nearest(qe.SparseVector(indices, values), using=layout.SPARSE),
        filter=edge_filter(layout.conditions(flt)),
        params=qe.SearchParams(idf=qe.IdfParams(corpus=edge_filter(layout.idf_corpus(flt)))),
        with_payload=True,
    )
    return {str(p.id): p.score for p in idx.shard.query(request)}


def kept_scores(idx: EdgeIndex, flt: IndexFilter, text: str) -> dict[str, float]:
    hits = idx.query(flt, mode="keyword", text=text, dense=None, limit=50)
    return {Chunk(payload=h.payload, dense=[]).point_id: h.score for h in hits}


def assert_same_scores(idx: EdgeIndex) -> None:
    assert idx.wait_counted(10)
    for flt in SCOPES:
        for text in TEXTS:
            want = edge_scores(idx, flt, text)
            got = kept_scores(idx, flt, text)
            assert got.keys() == want.keys(), (flt.mailboxes, text)
            for pid, score in want.items():
                assert got[pid] == pytest.approx(score, rel=1e-5), (flt.mailboxes, text)


@pytest.fixture
def edge(tmp_path, corpus):
    idx = EdgeIndex(tmp_path / "edge", DIM)
    idx.upsert(corpus)
    yield idx
    idx.close()


def test_kept_counts_score_like_edges_own_idf(edge):
    assert_same_scores(edge)


def test_kept_counts_survive_reopening(tmp_path, corpus):
    idx = EdgeIndex(tmp_path / "edge", DIM)
    idx.upsert(corpus)
    idx.close()
    reopened = EdgeIndex(tmp_path / "edge", DIM)
    try:
        assert_same_scores(reopened)
    finally:
        reopened.close()


def test_writing_the_same_points_again_counts_them_once(edge, corpus):
    edge.upsert(corpus)
    edge.upsert(corpus[:3] + corpus[:3])
    assert_same_scores(edge)


def test_delivery_changes_move_the_counts(edge):
    # A message filed into a second mailbox, and one taken into quarantine.
    main, shared = delivery_key("main", "INBOX"), delivery_key("shared", "INBOX")
    edge.set_message_fields(ACME, "m-budget", delivery_fields([main, shared], []))
    edge.set_message_fields(ACME, "m-claim", delivery_fields([], [main]))
    assert_same_scores(edge)


def test_a_scope_counts_only_its_own_mailboxes_and_tenant():
    counts = ScopedIdf()
    counts.count((ACME, frozenset({"alice"})), [1, 2])
    alone = counts.weights(ACME, ["alice"], [1, 3])
    counts.count((ACME, frozenset({"bob"})), [1, 3])
    counts.count((BETA, frozenset({"alice"})), [1, 3])
    assert counts.weights(ACME, ["alice"], [1, 3]) == alone
    assert counts.weights(ACME, ["alice", "bob"], [1, 3]) != alone
