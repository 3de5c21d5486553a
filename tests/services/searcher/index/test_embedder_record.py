"""An index records which embedder built it and refuses to be queried by another."""

from __future__ import annotations

import secrets

import pytest
from qdrant_client import QdrantClient

from pmsearch.services.searcher.embedding import embedder_id
from pmsearch.services.searcher.index import layout, open_index
from pmsearch.services.searcher.index.edge import EdgeIndex
from pmsearch.services.searcher.index.server import ServerIndex
from pmsearch.shared.settings import SearcherSettings

DIM = 384
MINILM = "onnx:all-MiniLM-L6-v2"
OTHER = "openai:text-embedding-3-small"


def _recorded_edge(idx: EdgeIndex) -> str | None:
    found = idx.shard.retrieve([layout.SCHEMA_POINT_ID], True, False)
    return (found[0].payload or {}).get(layout.EMBEDDER_FIELD)


def test_edge_records_the_embedder_that_built_it(tmp_path):
    idx = EdgeIndex(tmp_path / "edge", DIM, embedder=MINILM)
    assert _recorded_edge(idx) == MINILM
    idx.close()
    EdgeIndex(tmp_path / "edge", DIM, embedder=MINILM).close()


def test_edge_refuses_another_embedder_with_a_re_embed_hint(tmp_path):
    EdgeIndex(tmp_path / "edge", DIM, embedder=MINILM).close()
    with pytest.raises(layout.EmbedderMismatch) as refused:
        EdgeIndex(tmp_path / "edge", DIM, embedder=OTHER)
    message = str(refused.value)
    assert "embedded by onnx:all-MiniLM-L6-v2" in message and OTHER in message
    assert "PM_EMBEDDING_BACKEND=onnx PM_EMBEDDING_MODEL=all-MiniLM-L6-v2" in message
    assert "pmsearch reembed" in message and "pmsearch ingest" in message


def test_an_index_the_pytorch_embedder_built_before_onnx_existed_asks_for_torch(tmp_path):
    EdgeIndex(tmp_path / "edge", DIM, embedder="local:all-MiniLM-L6-v2").close()  # its earlier name
    EdgeIndex(tmp_path / "edge", DIM, embedder="torch:all-MiniLM-L6-v2").close()
    with pytest.raises(layout.EmbedderMismatch, match="PM_EMBEDDING_BACKEND=torch PM_EMBEDDING_MODEL=all-MiniLM-L6-v2"):
        EdgeIndex(tmp_path / "edge", DIM, embedder=MINILM)


def test_edge_index_without_a_record_adopts_the_configured_embedder(tmp_path):
    EdgeIndex(tmp_path / "edge", DIM).close()  # written before indexes recorded their embedder
    EdgeIndex(tmp_path / "edge", DIM, embedder=MINILM).close()
    with pytest.raises(layout.EmbedderMismatch):
        EdgeIndex(tmp_path / "edge", DIM, embedder=OTHER)


def test_server_collection_refuses_another_embedder():
    client = QdrantClient(location=":memory:")
    ServerIndex(client, "mail", DIM, embedder=MINILM)
    ServerIndex(client, "mail", DIM, embedder=MINILM)
    with pytest.raises(layout.EmbedderMismatch, match="collection 'mail' was embedded by onnx:all-MiniLM-L6-v2"):
        ServerIndex(client, "mail", DIM, embedder=OTHER)


def test_open_index_checks_the_settings_embedder(tmp_path):
    key = secrets.token_urlsafe(32)
    first = SearcherSettings(data_dir=tmp_path, scope_key=key)
    open_index(first, DIM, embedder_id(first)).close()
    other = SearcherSettings(data_dir=tmp_path, scope_key=key, embedding_backend="openai", embedding_model="e5")
    with pytest.raises(layout.EmbedderMismatch):
        open_index(other, DIM, embedder_id(other))


def test_an_index_of_another_size_names_its_embedder_rather_than_the_size(tmp_path):
    use = "use:universal-sentence-encoder-multilingual-3"  # 512-d
    EdgeIndex(tmp_path / "edge", 512, embedder=use).close()
    with pytest.raises(layout.EmbedderMismatch, match=f"embedded by {use}"):
        EdgeIndex(tmp_path / "edge", DIM, embedder=MINILM)
    EdgeIndex(tmp_path / "edge", 512, embedder=use).close()  # its own embedder still opens it
    client = QdrantClient(location=":memory:")
    ServerIndex(client, "mail", 512, embedder=use)
    with pytest.raises(layout.EmbedderMismatch, match=f"collection 'mail' was embedded by {use}"):
        ServerIndex(client, "mail", DIM, embedder=MINILM)


def test_embedder_id_names_the_packaged_model_one_way():
    key = secrets.token_urlsafe(32)
    spelled = SearcherSettings(scope_key=key, embedding_model="sentence-transformers/all-MiniLM-L6-v2")
    assert embedder_id(spelled) == embedder_id(SearcherSettings(scope_key=key)) == MINILM


def test_an_index_keeps_the_id_it_was_given_when_first_opened(tmp_path):
    first = EdgeIndex(tmp_path / "edge", DIM, embedder=MINILM)
    given = first.index_id
    first.close()
    assert len(given) == 32 and EdgeIndex(tmp_path / "edge", DIM, embedder=MINILM).index_id == given
    assert EdgeIndex(tmp_path / "other", DIM, embedder=MINILM).index_id != given
