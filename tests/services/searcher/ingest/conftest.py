"""Fixtures for ingest tests: the real Qdrant Edge adapter in a temporary folder, and a
deterministic stand-in embedder (ingest tests check plumbing, not semantic quality)."""

from __future__ import annotations

import hashlib
import math
import re
from typing import Sequence

import pytest

DIM = 384


class HashEmbedder:
    """Bag-of-words vectors from hashed tokens: deterministic, instant, L2-normalised.
    Records each call's batch size so tests can check that ingest batches."""

    dim = DIM

    def __init__(self) -> None:
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        out = []
        for text in texts:
            vec = [0.0] * DIM
            vec[0] = 0.01  # never the zero vector, which cosine cannot normalise
            for token in re.findall(r"\w+", text.lower()) or ["empty"]:
                h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "big")
                vec[h % DIM] += 1.0 if h & 1 << 40 else -1.0
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append([v / norm for v in vec])
        return out


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture
def index(tmp_path):
    from pmsearch.services.searcher.index.edge import EdgeIndex

    idx = EdgeIndex(tmp_path / "index", DIM)
    yield idx
    idx.close()
