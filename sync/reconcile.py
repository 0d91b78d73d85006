"""A reconcile's plan written to the store: what is new or changed embedded chunk by chunk, then what went dropped."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from router.catalog import FunctionDef
from router.embedding import Embedder
from router.metrics import Metrics
from router.retrieval.examples import reembed
from router.retrieval.index import FunctionStore
from sync.diff import Summary, prepare
from sync.progress import ProgressFactory, both, offset, progress_for
from sync.status import SyncLog

__all__ = ["WRITE_CHUNK", "PlanWriter", "reembed_examples"]

# Functions embedded between two writes: a sync interrupted at any point loses at most this
# much embedding work (seconds on a small CPU), and the next one resumes after it.
WRITE_CHUNK = 256


@dataclass(frozen=True)
class PlanWriter:
    """Writes reconciles, with their progress, their entries in the sync log and their metrics.

    Attributes:
        progress: makes a progress callback for large embeddings (None: none).
        log: each namespace's embeddings under way.
        metrics: where written functions are counted.
    """

    progress: ProgressFactory | None
    log: SyncLog
    metrics: Metrics

    async def reconcile(
        self,
        store: FunctionStore,
        embedder: Embedder,
        namespace: str,
        functions: Sequence[FunctionDef],
    ) -> Summary:
        """Write the plan of ``functions`` to ``store``; what it did."""
        todo, texts, embedded = await asyncio.to_thread(prepare, store, namespace, functions, embedder.batch_size)
        if embedded:
            progress = progress_for(self.progress, f"{namespace}", len(texts))
            running = self.log.started(namespace, len(texts))
            try:
                # Written chunk by chunk: an interrupted sync keeps what it embedded, and the
                # next reconcile's hash diff resumes with the rest.
                for start in range(0, len(embedded), WRITE_CHUNK):
                    chunk = slice(start, start + WRITE_CHUNK)
                    done = offset(both(progress, running.embedded), start, len(texts))
                    vectors = await embedder.embed(texts[chunk], progress=done)
                    await asyncio.to_thread(store.upsert, namespace, embedded[chunk], vectors)
                    self.metrics.written.inc(len(vectors))
                    running.written += len(vectors)
            finally:
                self.log.finished(namespace)
        if todo.updated:
            # A changed function may no longer do what its past callers wanted.
            await asyncio.to_thread(store.forget_examples, namespace, [f.name for f in todo.updated])
        if todo.removed:
            await asyncio.to_thread(store.remove, namespace, todo.removed)
        return Summary.of(namespace, todo)


async def reembed_examples(
    old: FunctionStore | None, new: FunctionStore, embedder: Embedder, *, after: int = -1
) -> int:
    """Usage examples follow a model change (same model: same collection, nothing to do)."""
    if old is None or old.examples is None or new.examples is None:
        return after
    if old.examples.collection.spec.name == new.examples.collection.spec.name:
        return after
    return await reembed(old.examples, new.examples, embedder, after=after)
