"""One contract, both adapters: Qdrant Edge on disk and qdrant-client's local mode
standing in for a server."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import qdrant_edge as qe
from qdrant_client import QdrantClient

from pmsearch.services.searcher.index.base import Chunk, ChunkPayload, IndexFilter, MailIndex
from pmsearch.services.searcher.index.edge import EdgeIndex
from pmsearch.services.searcher.index.server import ServerIndex

from .conftest import ACME, BETA, DIM

# qdrant-client's local mode ignores payload indexes and says so; a server uses them.
pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

ALL_ACME = IndexFilter(tenant_id=ACME, mailboxes=("main", "shared"))
MAIN = IndexFilter(tenant_id=ACME, mailboxes=("main",))
ALL_BETA = IndexFilter(tenant_id=BETA, mailboxes=("main", "shared"))


def make_index(kind: str, tmp_path: Path) -> MailIndex:
    if kind == "edge":
        return EdgeIndex(tmp_path / "edge", DIM)
    if kind == "edge-optimized":
        # A tiny indexing threshold makes even this corpus land in an optimised segment
        # (HNSW, payload indexes), where filters take a different code path.
        config = qe.EdgeOptimizersConfig(indexing_threshold=1, default_segment_number=1)
        return EdgeIndex(tmp_path / "edge", DIM, optimizers=config)
    return ServerIndex(QdrantClient(location=":memory:"), "mail", DIM)


@pytest.fixture(params=["edge", "edge-optimized", "server"])
def index(request, tmp_path, corpus):
    idx = make_index(request.param, tmp_path)
    idx.upsert(corpus)
    if request.param == "edge-optimized":
        assert idx.optimize()
    yield idx
    idx.close()


def ids(results) -> list[str]:
    payloads = [getattr(r, "payload", r) for r in results]
    return [p.message_id for p in payloads]


def narrowed(base: IndexFilter, **kw) -> IndexFilter:
    return base.model_copy(update=kw)


def run_everything(index: MailIndex, flt: IndexFilter, embedder, text: str = "invoice INV-2024-0173 vehicle collision"):
    """Every read method's payloads for ``flt``."""
    dense = embedder.embed([text])[0]
    out = []
    for mode in ("keyword", "semantic", "hybrid"):
        out += [r.payload for r in index.query(flt, mode=mode, text=text, dense=dense, limit=50)]
    out += [r.payload for r in index.recommend(flt, dense, limit=50)]
    out += index.scroll(flt, limit=1000)
    return out


def test_upsert_is_idempotent_by_point_id(index, corpus):
    before = index.count(ALL_ACME)
    index.upsert(corpus)
    assert index.count(ALL_ACME) == before == 11 - 1  # one ACME chunk is quarantined
    changed = corpus[0].model_copy(deep=True)
    changed.payload.subject = "Invoice for March (corrected)"
    index.upsert([changed])
    assert index.count(ALL_ACME) == before
    subjects = {p.subject for p in index.scroll(narrowed(MAIN, message_ids=("m-inv",), kind="body"))}
    assert subjects == {"Invoice for March (corrected)"}


def test_keyword_finds_exact_identifier_among_distractors(index):
    hits = index.query(MAIN, mode="keyword", text="INV-2024-0173", dense=None, limit=10)
    assert ids(hits)[:2] == ["m-inv", "m-inv"]  # body and attachment of the one message
    assert "m-inv-feb" in ids(hits)  # shares parts of the number, ranks below
    assert ids(hits).index("m-inv-feb") >= 2


def test_semantic_finds_paraphrase_keyword_misses(index, embedder):
    text = "car accident compensation"
    dense = embedder.embed([text])[0]
    semantic = index.query(MAIN, mode="semantic", text=text, dense=dense, limit=3)
    assert ids(semantic)[0] == "m-claim"
    keyword = index.query(MAIN, mode="keyword", text=text, dense=None, limit=10)
    assert "m-claim" not in ids(keyword)


def test_hybrid_finds_both_kinds_of_match(index, embedder):
    text = "car accident compensation"
    dense = embedder.embed([text])[0]
    assert ids(index.query(MAIN, mode="hybrid", text=text, dense=dense, limit=3))[0] == "m-claim"
    # An identifier: keywords rank the exact invoice first, the embedder its neighbour
    # (INV-2024-0174); rank fusion may tie them, but the exact one stays on top of the rest.
    text = "INV-2024-0173"
    dense = embedder.embed([text])[0]
    assert "m-inv" in ids(index.query(MAIN, mode="hybrid", text=text, dense=dense, limit=3))[:2]
    text = "car accident compensation and INV-2024-0173"
    dense = embedder.embed([text])[0]
    # The paraphrase is only in the dense list, so fusion ranks it below the invoice
    # chunks that both lists hold; it must still make the page.
    top = ids(index.query(MAIN, mode="hybrid", text=text, dense=dense, limit=6))
    assert top[0] == "m-inv" and "m-claim" in top


def test_hybrid_of_stop_words_falls_back_to_dense(index, embedder):
    dense = embedder.embed(["the"])[0]
    assert index.query(MAIN, mode="keyword", text="the", dense=None, limit=5) == []
    assert len(index.query(MAIN, mode="hybrid", text="the", dense=dense, limit=5)) == 5


def test_tenants_never_see_each_other(index, embedder):
    assert {p.tenant_id for p in run_everything(index, ALL_ACME, embedder)} == {ACME}
    beta = run_everything(index, ALL_BETA, embedder)
    assert {p.tenant_id for p in beta} == {BETA}
    assert index.count(ALL_BETA) == 2
    assert {p.message_id for p in index.scroll(ALL_BETA)} == {"m-beta-inv", "m-beta-claim"}
    # A message id from the other tenant is simply absent.
    assert index.count(narrowed(ALL_ACME, message_ids=("m-beta-inv",))) == 0
    assert index.vectors(narrowed(ALL_ACME, message_ids=("m-beta-inv",))) == []


def test_mailbox_narrowing(index, embedder):
    everywhere = ids(index.query(ALL_ACME, mode="keyword", text="INV-2024-0173", dense=None, limit=10))
    assert "m-shared-inv" in everywhere
    assert "m-shared-inv" not in ids(index.query(MAIN, mode="keyword", text="INV-2024-0173", dense=None, limit=10))
    shared = IndexFilter(tenant_id=ACME, mailboxes=("shared",))
    assert {tuple(p.mailboxes) for p in run_everything(index, shared, embedder)} == {("shared",)}
    assert index.count(shared) == 1


def test_quarantined_is_never_returned(index, embedder, corpus):
    quarantined = next(c for c in corpus if c.payload.quarantined)
    assert "m-quarantined" not in {p.message_id for p in run_everything(index, ALL_ACME, embedder)}
    # Not even when asked for by id, or when its own text and vector are the query.
    only = narrowed(ALL_ACME, message_ids=("m-quarantined",))
    assert index.count(only) == 0 and index.scroll(only) == [] and index.vectors(only) == []
    text = quarantined.payload.text
    for mode in ("keyword", "semantic", "hybrid"):
        hits = index.query(ALL_ACME, mode=mode, text=text, dense=quarantined.dense, limit=50)
        assert "m-quarantined" not in ids(hits)
    assert "m-quarantined" not in ids(index.recommend(ALL_ACME, quarantined.dense, limit=50))
    assert index.count(narrowed(ALL_ACME, folders=("Junk",))) == 0


def _utc(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("update", "expected"),
    [
        ({"date_from": _utc("2024-03-01"), "date_to": _utc("2024-03-31")}, {"m-inv", "m-inv-reply", "m-shared-inv"}),
        ({"date_from": _utc("2024-04-01")}, {"m-claim", "m-lunch"}),
        ({"date_to": _utc("2023-12-31")}, {"m-inv-2023"}),
        ({"senders": ("Agent@Insurer.example",)}, {"m-claim"}),
        ({"participants": ("bob@acme.example",)}, {"m-claim", "m-lunch"}),
        ({"participants": ("ann@acme.example",), "date_from": _utc("2024-03-07")}, {"m-inv-reply", "m-lunch"}),
        ({"has_attachment": True}, {"m-inv"}),
        ({"thread_ids": ("t-inv",)}, {"m-inv", "m-inv-reply"}),
        ({"rfc_message_ids": ("<claim@mail.example>",)}, {"m-claim"}),
        ({"folders": ("Ops",)}, {"m-outage"}),
        ({"normalized_subject": "invoice for march"}, {"m-inv", "m-inv-reply"}),
        ({"kind": "attachment"}, {"m-inv"}),
        ({"senders": ()}, set()),
    ],
)
def test_filters(index, embedder, update, expected):
    flt = narrowed(ALL_ACME, **update)
    assert {p.message_id for p in index.scroll(flt)} == expected
    assert {p.message_id for p in run_everything(index, flt, embedder)} <= expected
    assert index.count(flt) == len(index.scroll(flt))


def test_count_and_vectors(index, corpus):
    assert index.count(MAIN) == 9
    assert index.count(narrowed(MAIN, message_ids=("m-inv",))) == 2
    assert index.count(narrowed(MAIN, message_ids=("m-inv",), kind="body")) == 1
    [vector] = index.vectors(narrowed(MAIN, message_ids=("m-claim",)), limit=1)
    expected = next(c.dense for c in corpus if c.payload.message_id == "m-claim")
    assert vector == pytest.approx(expected, abs=1e-5)
    assert len(index.vectors(MAIN, limit=4)) == 4


def test_keyword_scores_are_identical_across_adapters(tmp_path, corpus):
    edge, server = make_index("edge", tmp_path), make_index("server", tmp_path)
    try:
        for idx in (edge, server):
            idx.upsert(corpus)
        for text in ("INV-2024-0173", "invoice March", "budget review headcount"):
            a = edge.query(ALL_ACME, mode="keyword", text=text, dense=None, limit=10)
            b = server.query(ALL_ACME, mode="keyword", text=text, dense=None, limit=10)
            assert [r.score for r in a] == pytest.approx([r.score for r in b], rel=1e-4)
            assert sorted(ids(a)) == sorted(ids(b))
    finally:
        edge.close()
        server.close()


def test_edge_persists_and_checks_dimension(tmp_path, corpus):
    idx = EdgeIndex(tmp_path / "edge", DIM)
    idx.upsert(corpus)
    idx.close()
    reopened = EdgeIndex(tmp_path / "edge", DIM)
    assert reopened.count(ALL_ACME) == 10
    reopened.close()
    with pytest.raises(Exception, match="vector size"):
        EdgeIndex(tmp_path / "edge", DIM * 2)


def test_edge_optimizes_by_itself_as_points_arrive(tmp_path, corpus, monkeypatch):
    runs = []
    original = EdgeIndex._optimize_locked
    monkeypatch.setattr(EdgeIndex, "_optimize_locked", lambda self: runs.append(1) or original(self))
    config = qe.EdgeOptimizersConfig(indexing_threshold=1, default_segment_number=1)
    idx = EdgeIndex(tmp_path / "edge", DIM, optimize_after=5, optimizers=config)
    idx.upsert(corpus[:3])
    assert runs == []
    idx.upsert(corpus[3:])
    assert runs == [1]
    assert idx.count(ALL_ACME) == 10
    idx.close()


def test_server_refuses_collection_of_other_dimension(corpus):
    client = QdrantClient(location=":memory:")
    ServerIndex(client, "mail", DIM)
    with pytest.raises(ValueError):
        ServerIndex(client, "mail", DIM * 2)


def test_open_index_picks_adapter(tmp_path, monkeypatch):
    import qdrant_client

    from pmsearch.services.searcher.index import open_index
    from pmsearch.shared.settings import SearcherSettings

    edge = open_index(SearcherSettings(data_dir=tmp_path), DIM)
    assert isinstance(edge, EdgeIndex) and edge.path == tmp_path / "qdrant-edge"
    edge.close()
    local = open_index(SearcherSettings(qdrant_url=":memory:", collection="c0"), DIM)
    assert isinstance(local, ServerIndex) and local.collection == "c0"
    seen = {}

    def fake_client(location=None, api_key=None, **_):
        seen.update(location=location, api_key=api_key)
        return QdrantClient(location=":memory:")

    monkeypatch.setattr(qdrant_client, "QdrantClient", fake_client)
    server = open_index(
        SearcherSettings(qdrant_url="http://qdrant.internal:6333", qdrant_api_key="k", collection="c1"), DIM
    )
    assert isinstance(server, ServerIndex) and server.collection == "c1"
    assert seen == {"location": "http://qdrant.internal:6333", "api_key": "k"}


def test_message_copies_sees_quarantined_points_of_any_mailbox(index):
    payload = dict(
        tenant_id="acme", mailbox="hidden-box", message_id="mq", rfc_message_id="q@x", thread_id="t",
        subject="s", normalized_subject="s", sender="a", sender_email="a@x", text="win a prize", quarantined=True,
    )
    index.upsert([Chunk(payload=ChunkPayload(**payload), dense=[1.0] + [0.0] * (DIM - 1))])
    [copy] = index.message_copies("acme", "q@x")
    assert copy.message_id == "mq" and copy.quarantined and copy.mailboxes == []
    assert index.message_copies("globex", "q@x") == []
    assert index.message_copies("acme", "other@x") == []


def test_edge_caps_segment_size_by_default(tmp_path, monkeypatch):
    # Uncapped segments made one optimisation of a 100k import pause the process 67 s
    # (bench: docs/scale.md); the pause itself is measured there, the wiring here.
    import pmsearch.services.searcher.index.edge as edge_module

    configs = []
    real = qe.EdgeConfig
    monkeypatch.setattr(edge_module.qe, "EdgeConfig", lambda **kw: configs.append(kw) or real(**kw))
    EdgeIndex(tmp_path / "edge", DIM).close()
    assert configs[0]["optimizers"].max_segment_size == edge_module.MAX_SEGMENT_KB
