"""The query-embedding cache in front of the real MiniLM embedder: a repeated query
text is served from it with the embedder's own vector; batches pass through."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from pmsearch.services.searcher import metrics
from pmsearch.services.searcher.embedding import OnnxEmbedder
from pmsearch.services.searcher.query_cache import QueryEmbeddingCache


@pytest.fixture(scope="module")
def local() -> OnnxEmbedder:
    return OnnxEmbedder()


def test_a_repeated_query_is_served_from_the_cache_with_the_embedders_vector(local):
    cache = QueryEmbeddingCache(local, size=8)
    first = cache.embed(["did the insurer pay the golf claim"])
    again = cache.embed(["did the insurer pay the golf claim"])
    assert cache.counts() == (1, 1)
    assert again == first
    assert again[0] == pytest.approx(local.embed(["did the insurer pay the golf claim"])[0], abs=1e-5)
    again[0][0] = 42.0  # what a caller does with its vector stays its own
    assert cache.embed(["did the insurer pay the golf claim"]) == first


def test_batches_pass_through_uncached(local):
    cache = QueryEmbeddingCache(local, size=8)
    texts = ["quarterly budget review", "ramen lunch on friday"]
    for got, want in zip(cache.embed(texts), local.embed(texts), strict=True):
        assert got == pytest.approx(want, abs=1e-5)
    assert cache.counts() == (0, 0)


def test_the_least_recently_used_text_is_dropped_past_the_size(local):
    cache = QueryEmbeddingCache(local, size=2)
    for text in ["alpha invoice", "beta invoice", "alpha invoice", "gamma invoice", "beta invoice"]:
        cache.embed([text])
    assert cache.counts() == (1, 4)  # beta was the oldest when gamma came


def test_size_zero_caches_nothing(local):
    cache = QueryEmbeddingCache(local, size=0)
    cache.embed(["alpha invoice"])
    cache.embed(["alpha invoice"])
    assert cache.counts() == (0, 0)


def test_hits_and_misses_are_scraped_from_the_watched_cache(local):
    cache = QueryEmbeddingCache(local, size=4)
    metrics.QUERY_EMBEDDING_CACHE.watch(cache.counts)
    cache.embed(["where is the spedition pick-up"])
    cache.embed(["where is the spedition pick-up"])
    assert REGISTRY.get_sample_value("pm_searcher_query_embedding_cache_total", {"result": "hit"}) == 1
    assert REGISTRY.get_sample_value("pm_searcher_query_embedding_cache_total", {"result": "miss"}) == 1
