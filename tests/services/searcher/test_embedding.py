"""The default embedder runs the packaged MiniLM offline on onnxruntime; the torch one
says how to install PyTorch when it is missing; the OpenAI-compatible one speaks the
/embeddings wire format."""

from __future__ import annotations

import json
import math

import httpx
import pytest

from pmsearch.services.searcher.embedding import OnnxEmbedder, OpenAIEmbedder, TorchEmbedder, make_embedder
from pmsearch.services.searcher.onnx_embedder import EmbedderUnavailable
from pmsearch.shared.settings import SearcherSettings


@pytest.fixture(scope="module")
def local() -> OnnxEmbedder:
    return OnnxEmbedder()


def _cos(a, b) -> float:
    return sum(x * y for x, y in zip(a, b))


def test_local_vectors_are_384_d_and_normalised(local):
    vectors = local.embed(["quarterly budget review", "ramen lunch on friday", ""])
    assert local.dim == 384
    assert [len(v) for v in vectors] == [384, 384, 384]
    for v in vectors:
        assert math.sqrt(sum(x * x for x in v)) == pytest.approx(1.0, abs=1e-4)


def test_local_similar_texts_are_closer_than_unrelated(local):
    car, claim, lunch = local.embed(
        [
            "car accident compensation",
            "the insurer approved the claim for the vehicle collision",
            "shall we get ramen for lunch on friday",
        ]
    )
    assert _cos(car, claim) > _cos(car, lunch) + 0.2


def test_local_vector_does_not_depend_on_what_else_is_embedded(local):
    texts = [f"message number {i} about the project plan" for i in range(9)] + ["a much longer text " * 40]
    batch = local.embed(texts)
    for i in (0, 5, 9):
        assert local.embed([texts[i]])[0] == pytest.approx(batch[i], abs=1e-6)
    assert local.embed([]) == []


def test_onnx_backend_refuses_another_model():
    with pytest.raises(ValueError, match="PM_EMBEDDING_BACKEND=torch"):
        make_embedder(SearcherSettings(embedding_model="intfloat/e5-small"))


def test_torch_backend_without_pytorch_says_how_to_install_it():
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        with pytest.raises(EmbedderUnavailable, match=r"pip install '\.\[torch\]'"):
            TorchEmbedder().embed(["x"])
    else:
        with pytest.raises(ValueError):  # installed: it still refuses a model it cannot find
            TorchEmbedder("no-such-model").embed(["x"])


def test_openai_embedder_posts_batches_and_normalises():
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        calls.append((request.url.path, request.headers.get("authorization"), body))
        data = [{"index": i, "embedding": [3.0, 4.0]} for i, _ in enumerate(body["input"])]
        return httpx.Response(200, json={"data": list(reversed(data))})

    emb = OpenAIEmbedder("http://embed.test/v1/", "m1", "k1", batch_size=2, transport=httpx.MockTransport(handler))
    vectors = emb.embed(["a", "b", "c"])
    assert vectors == [[0.6, 0.8]] * 3
    assert [c[2]["input"] for c in calls] == [["a", "b"], ["c"]]
    assert calls[0][0] == "/v1/embeddings" and calls[0][1] == "Bearer k1" and calls[0][2]["model"] == "m1"
    assert emb.dim == 2


def test_make_embedder_follows_settings():
    assert isinstance(make_embedder(SearcherSettings()), OnnxEmbedder)
    assert isinstance(make_embedder(SearcherSettings(embedding_backend="local")), TorchEmbedder)
    remote = make_embedder(
        SearcherSettings(embedding_backend="openai", embedding_base_url="http://embed.test/v1", embedding_model="e5")
    )
    assert isinstance(remote, OpenAIEmbedder) and remote.model == "e5"
    with pytest.raises(ValueError):
        make_embedder(SearcherSettings(embedding_backend="openai"))


def test_batching_embedder_gathers_concurrent_queries_into_one_pass():
    import threading

    from pmsearch.services.searcher.embedding import BatchingEmbedder

    class Counting:
        dim = 2
        calls: list[int] = []

        def embed(self, texts):
            self.calls.append(len(texts))
            return [[float(len(t)), 1.0] for t in texts]

    inner = Counting()
    batcher = BatchingEmbedder(inner, window_s=0.05)
    results: dict[str, list[list[float]]] = {}
    texts = [f"query {'x' * i}" for i in range(12)]
    threads = [threading.Thread(target=lambda t=t: results.__setitem__(t, batcher.embed([t]))) for t in texts]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert all(results[t] == [[float(len(t)), 1.0]] for t in texts)
    assert len(inner.calls) < len(texts)
    assert batcher.embed(["a"] * 10) == [[1.0, 1.0]] * 10  # large requests go straight through
    assert inner.calls[-1] == 10
