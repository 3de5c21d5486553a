"""Keyword search finds a reply by its sender's words, not by what it quotes, in both
adapters; an index whose keyword vectors were made from whole bodies (schema 2) has them
made again when opened."""

from __future__ import annotations

import pytest
import qdrant_edge as qe
from qdrant_client import QdrantClient, models

from pmsearch.services.searcher.index import bm25, layout
from pmsearch.services.searcher.index.edge import EdgeIndex
from pmsearch.services.searcher.index.server import ServerIndex
from tests.services.searcher.index.test_deliveries import DIM, chunk, scope

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

PARENT = "The wombatgrove release moves to Friday."
REPLY = f"Fine by me, quokkafield agrees.\n\nOn Mon, 4 Mar 2024 at 10:00, Ann <ann@x.example> wrote:\n> {PARENT}\n"
CORPUS = [chunk("m-parent", PARENT, [("alice", "INBOX")]), chunk("m-reply", REPLY, [("alice", "INBOX")])]


def keyword(index, term: str) -> set[str]:
    return {r.payload.message_id for r in index.query(scope("alice"), mode="keyword", text=term, dense=None, limit=10)}


@pytest.fixture(params=["edge", "server"])
def index(request, tmp_path):
    idx = EdgeIndex(tmp_path / "edge", DIM) if request.param == "edge" else ServerIndex(
        QdrantClient(location=":memory:"), "mail", DIM
    )
    idx.upsert(CORPUS)
    yield idx
    idx.close()


def test_a_reply_is_found_by_its_own_words(index):
    assert keyword(index, "quokkafield") == {"m-reply"}


def test_a_reply_is_not_found_by_the_words_it_quotes(index):
    assert keyword(index, "wombatgrove") == {"m-parent"}


def _as_schema_2_edge(idx: EdgeIndex) -> None:
    """Keyword vectors from the whole body, and the version marker of schema 2."""
    for c in CORPUS:
        vector = {layout.SPARSE: qe.SparseVector(*bm25.document_vector(c.payload.text))}
        idx.shard.update(qe.UpdateOperation.update_vectors([qe.PointVectors(c.point_id, vector)]))
    marker = qe.Point(layout.SCHEMA_POINT_ID, {}, {layout.SCHEMA_FIELD: 2})
    idx.shard.update(qe.UpdateOperation.upsert_points([marker]))


def test_an_edge_index_of_schema_2_gets_keyword_vectors_of_the_senders_words_on_open(tmp_path):
    idx = EdgeIndex(tmp_path / "edge", DIM)
    idx.upsert(CORPUS)
    _as_schema_2_edge(idx)
    idx.close()
    idx = EdgeIndex(tmp_path / "edge", DIM)
    try:
        assert keyword(idx, "wombatgrove") == {"m-parent"}
        assert keyword(idx, "quokkafield") == {"m-reply"}
    finally:
        idx.close()


def test_a_collection_of_schema_2_gets_keyword_vectors_of_the_senders_words_on_open():
    client = QdrantClient(location=":memory:")
    ServerIndex(client, "mail", DIM).upsert(CORPUS)
    for c in CORPUS:
        indices, values = bm25.document_vector(c.payload.text)
        vector = {layout.SPARSE: models.SparseVector(indices=indices, values=values)}
        client.update_vectors("mail", points=[models.PointVectors(id=c.point_id, vector=vector)], wait=True)
    client.set_payload("mail", payload={layout.SCHEMA_FIELD: 2}, points=[layout.SCHEMA_POINT_ID], wait=True)
    assert keyword(ServerIndex(client, "mail", DIM), "wombatgrove") == {"m-parent"}
