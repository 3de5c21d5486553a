"""One message, several deliveries, both adapters: mailbox and folder filters match any
delivery outside quarantine, delivery updates reach every point of a message, and an
index written by schema 1 (one mailbox per message) is migrated when opened."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import qdrant_edge as qe
from qdrant_client import QdrantClient, models

from pmsearch.services.searcher.index import bm25, layout
from pmsearch.services.searcher.index.base import Chunk, ChunkPayload, IndexFilter, MailIndex, delivery_key
from pmsearch.services.searcher.index.edge import EdgeIndex
from pmsearch.services.searcher.index.server import ServerIndex

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

DIM = 8
TERM = "wombatgrove"


def scope(*mailboxes: str, **kw) -> IndexFilter:
    return IndexFilter(tenant_id="acme", mailboxes=mailboxes, **kw)


def chunk(mid: str, text: str, deliveries=(), quarantined_deliveries=(), *, chunk_no: int = 0) -> Chunk:
    payload = ChunkPayload(
        tenant_id="acme", message_id=mid, rfc_message_id=f"{mid}@x", thread_id=f"t-{mid}", subject=mid,
        normalized_subject=mid, sender="a", sender_email="a@x", text=text, chunk_no=chunk_no,
        deliveries=[delivery_key(*d) for d in deliveries],
        quarantined_deliveries=[delivery_key(*d) for d in quarantined_deliveries],
    )
    return Chunk(payload=payload, dense=[1.0] + [0.0] * (DIM - 1))


CORPUS = [
    # Sent to alice and bob; bob filed it in Archive.
    chunk("m-both", f"{TERM} plan for both", [("alice", "INBOX"), ("bob", "Archive")]),
    chunk("m-both", "second chunk of the plan", [("alice", "INBOX"), ("bob", "Archive")], chunk_no=1),
    # Clean for alice, caught by bob's spam filter: bob must not see it.
    chunk("m-half", f"{TERM} newsletter", [("alice", "News")], [("bob", "INBOX")]),
    # Quarantined everywhere.
    chunk("m-spam", f"{TERM} prize", (), [("alice", "Junk"), ("bob", "INBOX")]),
    chunk("m-bob", f"{TERM} notes of bob", [("bob", "INBOX")]),
]


@pytest.fixture(params=["edge", "server"])
def index(request, tmp_path) -> MailIndex:
    idx = EdgeIndex(tmp_path / "edge", DIM) if request.param == "edge" else ServerIndex(
        QdrantClient(location=":memory:"), "mail", DIM
    )
    idx.upsert(CORPUS)
    yield idx
    idx.close()


def found(index: MailIndex, flt: IndexFilter) -> set[str]:
    scrolled = {p.message_id for p in index.scroll(flt)}
    keyword = {r.payload.message_id for r in index.query(flt, mode="keyword", text=TERM, dense=None, limit=20)}
    dense = {r.payload.message_id for r in index.recommend(flt, [1.0] + [0.0] * (DIM - 1), limit=20)}
    assert keyword <= scrolled and dense <= scrolled and index.count(flt) == len(index.scroll(flt))
    return scrolled


def test_a_message_delivered_to_two_mailboxes_is_found_in_each(index):
    assert found(index, scope("alice")) == {"m-both", "m-half"}
    assert found(index, scope("bob")) == {"m-both", "m-bob"}
    assert found(index, scope("alice", "bob")) == {"m-both", "m-half", "m-bob"}
    assert index.count(scope("alice", "bob", message_ids=("m-both",))) == 2  # one message, not two copies


def test_folder_filter_matches_a_delivery_inside_the_filtered_mailboxes_only(index):
    assert found(index, scope("bob", folders=("Archive",))) == {"m-both"}
    assert found(index, scope("alice", folders=("Archive",))) == set()  # bob's folder is not alice's
    assert found(index, scope("alice", folders=("INBOX",))) == {"m-both"}
    assert found(index, scope("alice", "bob", folders=("News", "Archive"))) == {"m-both", "m-half"}


def test_a_quarantined_delivery_is_visible_nowhere(index):
    assert "m-half" not in found(index, scope("bob"))
    assert "m-spam" not in found(index, scope("alice", "bob"))
    assert found(index, scope("alice", folders=("Junk",))) == set()


def test_set_message_fields_updates_every_point_of_the_message(index):
    [head] = [p for p in index.message_copies("acme", "m-half@x")]
    fields = head.with_delivery("bob", "INBOX", quarantined=False)  # a clean copy for bob too
    assert fields is not None and fields["mailboxes"] == ["alice", "bob"]
    index.set_message_fields("acme", "m-half", fields)
    assert "m-half" in found(index, scope("bob"))
    both = index.message_copies("acme", "m-both@x")
    assert [p.chunk_no for p in both] == [0]  # opening chunks only
    index.set_message_fields("acme", "m-both", both[0].with_delivery("carol", "INBOX", quarantined=False))
    assert index.count(scope("carol")) == 2  # both chunks moved


def test_the_mailbox_shown_is_one_inside_the_callers_filter():
    (p,) = [c.payload for c in CORPUS[:1]]
    assert p.delivery_in(("bob",)) == ("bob", "Archive")
    assert p.delivery_in(("alice", "bob")) == ("alice", "INBOX")
    assert p.delivery_in(("bob",), ("INBOX",)) == ("", "")
    spam = CORPUS[3].payload
    assert spam.quarantined and spam.delivery_in(("alice", "bob")) == ("", "")


# -- schema 1 → 2 ------------------------------------------------------------------------

LEGACY = [  # (mailbox, folder, quarantined, message id, text)
    ("alice", "INBOX", False, "m-old1", f"{TERM} old mail for alice"),
    ("alice", "Archive", False, "m-old2", f"{TERM} archived mail"),
    ("bob", "Junk", True, "m-old3", f"{TERM} old spam"),
]


def _legacy_payload(mailbox: str, folder: str, quarantined: bool, mid: str, text: str) -> dict:
    return dict(
        tenant_id="acme", mailbox=mailbox, folder=folder, quarantined=quarantined, message_id=mid,
        rfc_message_id=f"{mid}@x", thread_id=f"t-{mid}", subject=mid, normalized_subject=mid, sender="a",
        sender_email="a@x", recipients=[], recipient_names=[], date=None, date_ts=None, has_attachments=False,
        attachment_names=[], kind="body", attachment_name=None, chunk_no=0, text=text, source_text=text,
        in_reply_to=None, references=[],
    )


def _legacy_points():
    for mailbox, folder, quarantined, mid, text in LEGACY:
        point_id = str(uuid.uuid5(uuid.NAMESPACE_URL, mid))
        yield point_id, _legacy_payload(mailbox, folder, quarantined, mid, text), bm25.document_vector(text)


def _old_edge(path: Path) -> None:
    config = qe.EdgeConfig(
        vectors={layout.DENSE: qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine)},
        sparse_vectors={layout.SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
    )
    path.mkdir(parents=True)
    shard = qe.EdgeShard.create(str(path), config)
    for field in ("tenant_id", "mailbox", "folder", "message_id", "rfc_message_id"):
        shard.update(qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Keyword))
    points = [
        qe.Point(pid, {layout.DENSE: [1.0] + [0.0] * (DIM - 1), layout.SPARSE: qe.SparseVector(*sparse)}, payload)
        for pid, payload, sparse in _legacy_points()
    ]
    shard.update(qe.UpdateOperation.upsert_points(points))
    shard.flush()
    shard.close()


def _old_server(client: QdrantClient) -> None:
    client.create_collection(
        "mail",
        vectors_config={layout.DENSE: models.VectorParams(size=DIM, distance=models.Distance.COSINE)},
        sparse_vectors_config={layout.SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    client.upsert("mail", [
        models.PointStruct(id=pid, payload=payload, vector={
            layout.DENSE: [1.0] + [0.0] * (DIM - 1),
            layout.SPARSE: models.SparseVector(indices=sparse[0], values=sparse[1]),
        })
        for pid, payload, sparse in _legacy_points()
    ])


@pytest.fixture(params=["edge", "server"])
def migrated(request, tmp_path):
    if request.param == "edge":
        _old_edge(tmp_path / "edge")
        idx = EdgeIndex(tmp_path / "edge", DIM)
    else:
        client = QdrantClient(location=":memory:")
        _old_server(client)
        idx = ServerIndex(client, "mail", DIM)
    yield idx
    idx.close()


def test_schema_1_index_is_migrated_on_open_and_keeps_its_ids(migrated):
    assert found(migrated, scope("alice")) == {"m-old1", "m-old2"}
    assert found(migrated, scope("alice", folders=("Archive",))) == {"m-old2"}
    assert found(migrated, scope("bob")) == set()  # quarantined stays hidden
    [old] = migrated.message_copies("acme", "m-old1@x")
    assert old.deliveries == [delivery_key("alice", "INBOX")] and old.content_digest is None
    [spam] = migrated.message_copies("acme", "m-old3@x")
    assert spam.quarantined and spam.quarantined_deliveries == [delivery_key("bob", "Junk")]


def test_schema_version_is_recorded_in_the_collection(migrated):
    if isinstance(migrated, EdgeIndex):
        [marker] = migrated.shard.retrieve([layout.SCHEMA_POINT_ID], True, False)
    else:
        [marker] = migrated.client.retrieve("mail", [layout.SCHEMA_POINT_ID], with_payload=True)
    assert marker.payload[layout.SCHEMA_FIELD] == layout.SCHEMA_VERSION
    assert set(marker.payload) <= {layout.SCHEMA_FIELD, layout.EMBEDDER_FIELD, layout.INDEX_ID_FIELD}


def test_reopening_a_migrated_edge_index_changes_nothing(tmp_path):
    _old_edge(tmp_path / "edge")
    EdgeIndex(tmp_path / "edge", DIM).close()
    again = EdgeIndex(tmp_path / "edge", DIM)
    try:
        assert found(again, scope("alice")) == {"m-old1", "m-old2"}
        assert "mailbox" not in again.shard.info().payload_schema
    finally:
        again.close()


def test_an_index_of_a_newer_schema_is_refused(tmp_path):
    idx = EdgeIndex(tmp_path / "edge", DIM)
    marker = qe.Point(layout.SCHEMA_POINT_ID, {}, {layout.SCHEMA_FIELD: layout.SCHEMA_VERSION + 1})
    idx.shard.update(qe.UpdateOperation.upsert_points([marker]))
    idx.close()
    with pytest.raises(ValueError, match="newer than this code"):
        EdgeIndex(tmp_path / "edge", DIM)
