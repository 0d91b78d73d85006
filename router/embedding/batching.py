"""Query embeddings, cached and micro-batched.

Concurrent route requests share one model call: while the model encodes one batch, new
texts queue up and go together in the next. A request that finds the model idle starts
at once, so a lone request waits for nothing; under load throughput grows with
concurrency instead of queueing one text per forward pass.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]

Encode = Callable[[Sequence[str]], Awaitable[Vectors]]


class QueryBatcher:
    """Encodes query texts through a cache and shared batches.

    Args:
        encode: encodes a batch of texts off the event loop.
        dimension: the vectors' dimension.
        max_batch: most texts in one model call.
        max_wait: seconds to wait for more texts before a batch starts when others are
            already queued (0 starts as soon as the model is free).
        cache_size: query vectors kept, by exact text (0 disables the cache).
    """

    def __init__(
        self,
        encode: Encode,
        *,
        dimension: int,
        max_batch: int = 64,
        max_wait: float = 0.0,
        cache_size: int = 4096,
    ) -> None:
        self._encode = encode
        self._dimension = dimension
        self._max_batch = max_batch
        self._max_wait = max_wait
        self._cache: OrderedDict[str, Vectors] = OrderedDict()
        self._cache_size = cache_size
        self._queue: dict[str, asyncio.Future[Vectors]] = {}
        self._worker: asyncio.Task[None] | None = None
        self.batches = 0
        self.cache_hits = 0

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Vectors of ``texts`` (one row each, same order)."""
        rows: list[Vectors | asyncio.Future[Vectors]] = []
        for text in texts:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                self.cache_hits += 1
                rows.append(cached)
                continue
            future = self._queue.get(text)
            if future is None:
                future = asyncio.get_running_loop().create_future()
                self._queue[text] = future
            rows.append(future)
        if self._queue and (self._worker is None or self._worker.done()):
            self._worker = asyncio.create_task(self._drain(), name="query-batcher")
        # Shielded: one caller giving up must not cancel a vector other callers wait for.
        vectors = [row if isinstance(row, np.ndarray) else await asyncio.shield(row) for row in rows]
        if not vectors:
            return np.zeros((0, self._dimension), dtype=np.float32)
        return np.stack(vectors)

    async def _drain(self) -> None:
        while self._queue:
            if self._max_wait and len(self._queue) < self._max_batch:
                await asyncio.sleep(self._max_wait)
            texts = list(self._queue)[: self._max_batch]
            futures = [self._queue.pop(t) for t in texts]
            try:
                vectors = await self._encode(texts)
            except Exception as exc:  # every waiter gets the model's error, not a hang
                for future in futures:
                    if not future.done():
                        future.set_exception(exc)
                continue
            self.batches += 1
            for text, future, vector in zip(texts, futures, vectors, strict=True):
                self._remember(text, vector)
                if not future.done():
                    future.set_result(vector)

    def _remember(self, text: str, vector: Vectors) -> None:
        if self._cache_size <= 0:
            return
        self._cache[text] = vector
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
