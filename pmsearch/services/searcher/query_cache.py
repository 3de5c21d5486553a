"""A small LRU of query embeddings, in front of the searcher's embedder.

A query's embedding is a pure function of its text, and on two cores it is a large
share of a search's CPU. The same texts come back: a run's first search is its
question, agents ask a question again, an evaluation replays its set. Only single-text
calls (a search's query) are cached; ingest embeds through the embedder directly.

A cached vector says nothing about anyone's mail (it is the model's function of the
text alone), so one cache serves every tenant.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

from pmsearch.services.searcher.embedding import Embedder, embed_queries


class QueryEmbeddingCache:
    """``inner`` with its single-text calls served from an LRU of ``size`` texts (0:
    none). Thread-safe: ``lru_cache`` is, and two threads missing the same text both
    ask ``inner``, which only costs the saving."""

    def __init__(self, inner: Embedder, size: int) -> None:
        self.inner = inner
        self.size = size
        self._one = lru_cache(maxsize=size)(self._embed_one) if size > 0 else None

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self._one is None or len(texts) != 1:
            return self.inner.embed(texts)
        return [list(self._one(texts[0], False))]  # a fresh list: the caller owns what it gets

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        """As :meth:`embed`, through the inner embedder's query path (its own cache
        entries: e5 embeds a text as a query otherwise than as a passage)."""
        if self._one is None or len(texts) != 1:
            return embed_queries(self.inner, texts)
        return [list(self._one(texts[0], True))]

    def counts(self) -> tuple[int, int]:
        """(hits, misses) so far; (0, 0) when caching is off."""
        if self._one is None:
            return 0, 0
        info = self._one.cache_info()
        return info.hits, info.misses

    def _embed_one(self, text: str, query: bool) -> tuple[float, ...]:
        return tuple((embed_queries(self.inner, [text]) if query else self.inner.embed([text]))[0])
