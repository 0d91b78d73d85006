"""Query embeddings, cached and micro-batched.

Concurrent route requests share model calls: while the model encodes, new texts queue up
and go together in the next calls, spread over the lanes (model calls that can run at once,
each on part of the cores). A request that finds the model idle starts at once on every
core, so a lone request waits for nothing; under load throughput grows with concurrency
instead of queueing one text per forward pass.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]

# Encodes texts off the event loop; the flag says whether the call has the machine to itself.
Encode = Callable[[Sequence[str], bool], Awaitable[Vectors]]


class QueryBatcher:
    """Encodes query texts through a cache and shared batches on one or more lanes.

    A lane is one model call at a time. A request that finds every lane idle is encoded at
    once and alone, told so (``alone=True``) to use every core; texts that arrive while lanes
    are busy queue up and go together, split across the lanes that are free, each call told it
    shares the machine. A call holding every core is not joined by another: what queues meanwhile
    starts when it ends.

    Args:
        encode: encodes a batch of texts off the event loop; its second argument says whether
            the call has the machine to itself.
        dimension: the vectors' dimension.
        lanes: most model calls at once.
        max_batch: most texts in one model call.
        cache_size: query vectors kept, by exact text (0 disables the cache).
    """

    def __init__(
        self,
        encode: Encode,
        *,
        dimension: int,
        lanes: int = 1,
        max_batch: int = 64,
        cache_size: int = 4096,
    ) -> None:
        if lanes < 1:
            raise ValueError(f"lanes must be at least 1, not {lanes}")
        self._encode = encode
        self._dimension = dimension
        self._lanes = lanes
        self._max_batch = max_batch
        self._cache: OrderedDict[str, Vectors] = OrderedDict()
        self._cache_size = cache_size
        self._pending: dict[str, asyncio.Future[Vectors]] = {}  # queued or being encoded
        self._queue: dict[str, None] = {}  # not started yet, oldest first
        self._running: set[asyncio.Task[None]] = set()
        self._alone = False
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
            future = self._pending.get(text)
            if future is None:
                future = asyncio.get_running_loop().create_future()
                self._pending[text] = future
                self._queue[text] = None
            rows.append(future)
        self._dispatch()
        # Shielded: one caller giving up must not cancel a vector other callers wait for.
        vectors = [row if isinstance(row, np.ndarray) else await asyncio.shield(row) for row in rows]
        if not vectors:
            return np.zeros((0, self._dimension), dtype=np.float32)
        return np.stack(vectors)

    def _dispatch(self) -> None:
        """Start calls on the free lanes for what is queued."""
        free = self._lanes - len(self._running)
        if not self._queue or self._alone or free <= 0:
            return
        waiting = list(self._queue)
        parts = min(free, len(waiting))
        alone = not self._running and parts == 1
        taken = sorted(waiting[: self._max_batch * parts], key=len)  # the oldest first; like lengths together
        size = -(-len(taken) // parts)
        for start in range(0, len(taken), size):
            texts = taken[start : start + size]
            for text in texts:
                del self._queue[text]
            task = asyncio.create_task(self._call(texts, alone=alone), name="query-batch")
            self._running.add(task)
            task.add_done_callback(self._ended)
        self._alone = alone

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        self._alone = False
        if not task.cancelled():  # cancelled: the loop is closing, start nothing more
            self._dispatch()

    async def _call(self, texts: list[str], *, alone: bool) -> None:
        futures = [self._pending[text] for text in texts]
        try:
            vectors = await self._encode(texts, alone)
        except asyncio.CancelledError:  # the loop is closing: so are the waiters
            for future in futures:
                future.cancel()
            raise
        except Exception as exc:  # every waiter gets the model's error, not a hang
            for future in futures:
                if not future.done():
                    future.set_exception(exc)
            return
        finally:
            for text in texts:
                del self._pending[text]
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


def length_groups(lengths: Sequence[int], *, max_batch: int, slack: float = 0.25) -> list[list[int]]:
    """Indexes of ``lengths`` in groups of similar length, shortest first.

    A group grows while padding its members to the longest adds at most ``slack`` of
    their real tokens, and up to ``max_batch`` members.
    """
    groups: list[list[int]] = []
    group: list[int] = []
    tokens = 0
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        size = lengths[i]
        if group and (len(group) >= max_batch or (len(group) + 1) * size > (tokens + size) * (1 + slack)):
            groups.append(group)
            group, tokens = [], 0
        group.append(i)
        tokens += size
    if group:
        groups.append(group)
    return groups


class QueryRuns:
    """Encodes a micro-batch of queries: groups of similar length batched, a text with no peer alone.

    Batching pays only among texts of like length (padding costs more than it saves), and a
    backend that gains from batches (bf16 on AMX) can be slower for one text than another
    (fp32): so each length group of two or more goes to ``batch``, each lone text to ``single``.

    Args:
        single: encodes one text (the backend measured fastest for one query).
        batch: encodes a group of texts (the backend measured fastest for micro-batches).
        max_batch: most texts in one group.
        lengths: the length of each text (token counts, or characters as a proxy).
    """

    def __init__(
        self,
        single: Callable[[list[str]], Vectors],
        batch: Callable[[list[str]], Vectors],
        *,
        dimension: int,
        max_batch: int = 16,
        lengths: Callable[[Sequence[str]], Sequence[int]] | None = None,
    ) -> None:
        self._single, self._batch = single, batch
        self._dimension = dimension
        self._max_batch = max_batch
        self._lengths = lengths or (lambda texts: [len(t) for t in texts])

    def __call__(self, texts: list[str]) -> Vectors:
        """The vectors of ``texts``, in their order."""
        if len(texts) == 1:
            return self._single(texts)
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for group in length_groups(self._lengths(texts), max_batch=self._max_batch):
            run = self._single if len(group) == 1 else self._batch
            out[group] = run([texts[i] for i in group])
        return out
