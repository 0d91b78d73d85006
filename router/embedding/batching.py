"""Query embeddings, cached and micro-batched; vectors packed as text, to keep in a payload.

Concurrent routes share model calls: while the model encodes, new texts queue up and go
together in the next calls, spread over the lanes (model calls that can run at once, each on
part of the cores). A text that finds the model idle starts at once on every core, so a lone
route waits for nothing.
"""

from __future__ import annotations

import asyncio
import base64
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]

# Encodes texts off the event loop; the flag says whether the call has the machine to itself.
Encode = Callable[[Sequence[str], bool], Awaitable[Vectors]]


def pack(vectors: npt.ArrayLike, dtype: str) -> str:
    """Vectors as the base64 text of their values in ``dtype`` (``<f2``, ``<f4``)."""
    return base64.b64encode(np.asarray(vectors, dtype=dtype).tobytes()).decode("ascii")


def unpack(text: str, dtype: str, dimension: int) -> Vectors:
    """What ``pack`` made, as float32 rows of ``dimension``."""
    return np.frombuffer(base64.b64decode(text), dtype=dtype).astype(np.float32).reshape(-1, dimension)


def split(texts: Sequence[str], parts: int, *, longest: int = 0) -> list[list[str]]:
    """``texts`` (shortest first) cut into at most ``parts`` runs of like length, the costliest as cheap as can be.

    A call pads texts to the longest, so a run costs at most its size times its longest text
    (counted up to ``longest`` characters, where the model cuts; 0: no cut): a turn's whole
    text and its short parts go on two lanes as the whole alone and the parts together, not
    half the texts each. The least cost that ``parts`` runs can keep to is searched for; within
    a cost, each run, from the longest texts down, takes all it can.
    """

    def length(text: str) -> int:
        return max(1, min(len(text), longest) if longest else len(text))

    def runs(cost: int) -> list[list[str]]:
        taken: list[list[str]] = []
        end = len(texts)
        while end > 0:
            start = max(0, end - max(1, cost // length(texts[end - 1])))
            taken.append(list(texts[start:end]))
            end = start
        return taken[::-1]

    if not texts:
        return []
    low, high = length(texts[-1]), len(texts) * length(texts[-1])
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if len(runs(middle)) <= max(1, parts) else (middle + 1, high)
    return runs(low)


class QueryBatcher:
    """Encodes query texts through a cache and shared calls on one or more lanes.

    A text that finds every lane idle is encoded at once, told so (``alone=True``) to use every
    core; texts that arrive meanwhile queue up and, once it ends, go together, split across the
    free lanes by length, each call told it shares the machine.

    Args:
        encode: encodes a batch of texts off the event loop.
        dimension: the vectors' dimension.
        lanes: most model calls at once.
        cache_size: query vectors kept, by exact text (0 disables the cache).
        longest: the most characters of a text the model reads (0: all), what a text costs at most.
    """

    def __init__(
        self, encode: Encode, *, dimension: int, lanes: int = 1, cache_size: int = 4096, longest: int = 0
    ) -> None:
        if lanes < 1:
            raise ValueError(f"lanes must be at least 1, not {lanes}")
        self._encode = encode
        self._dimension = dimension
        self._lanes = lanes
        self._cache: OrderedDict[str, Vectors] = OrderedDict()
        self._cache_size = cache_size
        self._longest = longest
        self._pending: dict[str, asyncio.Future[Vectors]] = {}  # queued or being encoded
        self._queue: dict[str, None] = {}  # not started yet, oldest first
        self._running: set[asyncio.Task[None]] = set()
        self._alone = False

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Vectors of ``texts`` (one row each, same order)."""
        rows: list[Vectors | asyncio.Future[Vectors]] = []
        for text in texts:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                rows.append(cached)
                continue
            future = self._pending.get(text)
            if future is None:
                future = self._pending[text] = asyncio.get_running_loop().create_future()
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
        waiting = sorted(self._queue, key=len)  # like lengths together: padding costs more than batching saves
        self._queue.clear()
        groups = split(waiting, min(free, len(waiting)), longest=self._longest)
        self._alone = not self._running and len(groups) == 1
        for group in groups:
            task = asyncio.create_task(self._call(group, self._alone), name="query-batch")
            self._running.add(task)
            task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        self._alone = False
        if not task.cancelled():  # cancelled: the loop is closing, start nothing more
            self._dispatch()

    async def _call(self, texts: list[str], alone: bool) -> None:
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
        for text, future, vector in zip(texts, futures, vectors, strict=True):
            if self._cache_size > 0:
                self._cache[text] = vector
                if len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            if not future.done():
                future.set_result(vector)
