"""A reconcile's plan written to the store: what is new or changed embedded chunk by chunk, then what went dropped.

The progress of a long embedding is logged by tenths, and shown by the CLI's bar. What this
process's syncs did is kept too: each namespace's last result, the embedding under way, and
counters.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from router.catalog.functions import FunctionDef
from router.embedding import Embedder, Progress, Vectors
from router.retrieval.examples import reembed
from router.retrieval.index import FunctionStore
from router.retrieval.texts import parameter_facets
from sync.diff import Summary, prepare

log = logging.getLogger("sync.service")
ProgressFactory = Callable[[str, int], Progress]
# Below this many texts an embedding is quick enough to need no progress report.
PROGRESS_THRESHOLD = 200

# Functions embedded between two writes: a sync interrupted at any point loses at most this
# much embedding work (seconds on a small CPU), and the next one resumes after it.
WRITE_CHUNK = 256


class SyncCounters:
    """Where syncs are counted: the process's metrics subclass it; itself, it counts nothing."""

    def synced(self, source: str, summary: Summary) -> None:
        """A reconcile completed."""

    def sync_failed(self, source: str, *, outcome: str = "failed") -> None:
        """A reconcile failed (``failed``), or a source was refused (``rejected``)."""

    def wrote(self, functions: int) -> None:
        """``functions`` were embedded and written."""

    def multilingual_failed(self) -> None:
        """A write to the multilingual space failed (the default space has the catalog)."""


@dataclass(frozen=True)
class SyncResult:
    """The last sync of one namespace: when, from where, and whether it changed, failed or was refused."""

    namespace: str
    source: str
    outcome: str
    at: float
    counts: dict[str, int] = field(default_factory=dict)
    detail: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The result as JSON, its namespace aside."""
        return {k: v for k, v in asdict(self).items() if k != "namespace"}


@dataclass
class SyncProgress:
    """An embedding in progress: how many of the namespace's functions are embedded, and written, so far."""

    namespace: str
    total: int
    done: int = 0
    written: int = 0
    started_at: float = field(default_factory=time.time)

    def embedded(self, done: int, _total: int) -> None:
        """A progress callback: ``done`` of the functions are embedded."""
        self.done = max(self.done, done)

    def as_dict(self) -> dict[str, Any]:
        """The progress as JSON."""
        return asdict(self)


class SyncLog:
    """Last results by namespace and the syncs under way, kept in memory by the catalog writer."""

    def __init__(self) -> None:
        self.results: dict[str, SyncResult] = {}
        self.running: dict[str, SyncProgress] = {}

    def synced(self, source: str, summary: Summary) -> None:
        """Record a completed reconcile."""
        outcome = "changed" if summary.changed else "unchanged"
        self.results[summary.namespace] = SyncResult(summary.namespace, source, outcome, time.time(), summary.counts())

    def failed(self, namespace: str, source: str, detail: str, *, outcome: str = "failed") -> None:
        """Record a reconcile that failed, or a source refused before anything changed (``rejected``)."""
        self.results[namespace] = SyncResult(namespace, source, outcome, time.time(), detail=detail)

    def kept(self, namespace: str, source: str, detail: str) -> None:
        """Record a source that would have emptied or removed the catalog, which was kept as stored."""
        self.results[namespace] = SyncResult(namespace, source, "kept", time.time(), detail=detail)

    def started(self, namespace: str, total: int) -> SyncProgress:
        """Note that ``total`` functions of ``namespace`` are being embedded."""
        progress = self.running[namespace] = SyncProgress(namespace, total)
        return progress

    def finished(self, namespace: str) -> None:
        """The embedding of ``namespace`` ended (written or not)."""
        self.running.pop(namespace, None)


async def reconcile(
    store: FunctionStore,
    embedder: Embedder,
    namespace: str,
    functions: Sequence[FunctionDef],
    *,
    stored: Mapping[str, str] | None = None,
    progress: ProgressFactory | None,
    sync_log: SyncLog,
    counters: SyncCounters,
) -> Summary:
    """Write the plan of ``functions`` to ``store``; what it did.

    Args:
        stored: as for ``prepare``.
        progress: makes a progress callback for large embeddings (None: none).
        sync_log: each namespace's embeddings under way.
        counters: where written functions are counted.
    """
    todo, texts, embedded = await asyncio.to_thread(prepare, store, namespace, functions, embedder.batch_size, stored)
    if embedded:
        running = sync_log.started(namespace, len(texts))
        try:
            # Written chunk by chunk: an interrupted sync keeps what it embedded, and the
            # next reconcile's hash diff resumes with the rest.
            report = both(progress_for(progress, namespace, len(texts)), running.embedded)
            seen: dict[str, Vectors] = {}  # parameter facets embedded so far: catalogs repeat them
            for start in range(0, len(embedded), WRITE_CHUNK):
                chunk = slice(start, start + WRITE_CHUNK)
                done = _scaled(report, start, len(embedded[chunk]), len(texts))
                vectors, facets = await _embed(embedder, texts[chunk], embedded[chunk], done, seen)
                await asyncio.to_thread(store.upsert, namespace, embedded[chunk], vectors, facets)
                counters.wrote(len(vectors))
                running.written += len(vectors)
        finally:
            sync_log.finished(namespace)
    if todo.updated:
        # A changed function may no longer do what its past callers wanted.
        await asyncio.to_thread(store.forget_examples, namespace, [f.name for f in todo.updated])
    if todo.removed:
        await asyncio.to_thread(store.remove, namespace, todo.removed)
    return Summary.of(namespace, todo)


async def _embed(
    embedder: Embedder,
    texts: list[str],
    functions: Sequence[FunctionDef],
    progress: Progress,
    seen: dict[str, Vectors],
) -> tuple[Vectors, list[Vectors]]:
    """The vectors of ``functions`` (their ``texts``), and each one's facets: its own vector, then its parameters'.

    A parameter facet already in ``seen`` is not embedded again (a 10,000-function BFCL-grown
    catalog has 27,519 parameter facets, 8,408 of them distinct); the new ones are added to it.
    """
    vectors = await embedder.embed(texts, progress=progress)
    parameters = [parameter_facets(f) for f in functions]
    new = [t for t in dict.fromkeys(t for group in parameters for t in group) if t not in seen]
    seen.update(zip(new, await embedder.embed(new, kind="facet"), strict=True))
    return vectors, [np.vstack([vectors[i], *(seen[t] for t in group)]) for i, group in enumerate(parameters)]


def _scaled(progress: Progress, start: int, functions: int, total: int) -> Progress:
    """Progress of a chunk's texts as functions embedded: ``start`` before it, ``functions`` in it, of ``total``."""
    return lambda done, texts: progress(start + functions * done // max(texts, 1), total)


async def reembed_examples(
    old: FunctionStore | None, new: FunctionStore, embedder: Embedder, *, after: int = -1
) -> int:
    """Usage examples follow a model change (same model: same collection, nothing to do)."""
    if old is None:
        return after
    if old.examples.collection.spec.name == new.examples.collection.spec.name:
        return after
    return await reembed(old.examples, new.examples, embedder, after=after)


def progress_for(shown: ProgressFactory | None, label: str, total: int) -> Progress | None:
    """Progress of embedding ``total`` texts: logged by tenths, and shown where ``shown`` makes a display."""
    if total < PROGRESS_THRESHOLD:
        return None
    return both(shown(label, total) if shown else None, _logged(label))


def both(first: Progress | None, second: Progress) -> Progress:
    """One progress callback calling ``first`` (when given), then ``second``."""
    if first is None:
        return second

    def report(done: int, total: int) -> None:
        first(done, total)
        second(done, total)

    return report


def _logged(label: str) -> Progress:
    last = [0]

    def report(done: int, total: int) -> None:
        tenth = done * 10 // max(total, 1)
        if tenth > last[0]:
            last[0] = tenth
            log.info("embedding", extra={"what": label, "done": done, "total": total})

    return report
