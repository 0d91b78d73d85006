"""Floors measured in the benchmark process, and the reconcile alone (no HTTP) on a stopped server's data.

Floors use the same ``Embedder`` settings the server does (model, ONNX backend, thread count,
batch size, text template), built through ``router.runtime.embedder_loader``.
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import Applied, Stopwatch, apply_timed, median_applied, progress_bar, timed_async
from benchmarks.perf_store import Catalog
from router.catalog import FunctionDef
from router.embedding import Embedder, EmbedderPool
from router.retrieval.texts import template
from router.runtime import Runtime
from router.settings import Settings, StorageSettings, SyncSettings
from sync import service as service_module

__all__ = [
    "PARTS",
    "Reconciled",
    "encode_rate",
    "floor_sample",
    "fresh",
    "model_load_seconds",
    "one_text_seconds",
    "reconcile",
]

PARTS = ("scroll hashes", "plan (hashes definitions)", "embed", "upsert")
_LOAD_MODEL = (
    "from router.runtime import embedder_loader\n"
    "from router.settings import EmbeddingSettings\n"
    "settings = EmbeddingSettings()\n"
    "embedder_loader(settings)(settings.model).encode(['warm'])\n"
)


def floor_sample(texts: Sequence[str], *, most: int) -> list[str]:
    """The catalog's texts sorted by length (as the reconcile sorts them), every k-th when over ``most``.

    Every k-th text of the sorted list keeps the distribution of lengths, which sets the cost.
    """
    ordered = sorted(texts, key=len)
    step = max(1, math.ceil(len(ordered) / most))
    return ordered[::step]


async def encode_rate(embedder: Embedder, texts: Sequence[str], *, label: str) -> float:
    """Texts per second of a bare batch encode through ``Embedder.embed`` (what the reconcile calls)."""
    seconds = await timed_async(embedder.embed(texts, progress=progress_bar(label, len(texts))))
    return len(texts) / seconds


def one_text_seconds(embedder: Embedder, text: str, *, repeats: int) -> float:
    """Median seconds to encode one text, bare."""
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        embedder.encode([text])
        runs.append(time.perf_counter() - start)
    return sorted(runs)[len(runs) // 2]


def model_load_seconds(*, timeout: float = 300.0) -> float:
    """Seconds for a fresh interpreter to import the router, load the model and encode once: the floor of start-up."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", _LOAD_MODEL], check=True, timeout=timeout, capture_output=True)  # noqa: S603
    return time.perf_counter() - start


def fresh(functions: Sequence[FunctionDef]) -> list[FunctionDef]:
    """New ``FunctionDef`` objects, as a source hands over on every event: no content hash cached from before."""
    return [dataclasses.replace(f) for f in functions]


@dataclass(frozen=True)
class Reconciled:
    """The reconcile alone (``CatalogService.apply`` in this process) on a store of the catalog.

    Attributes:
        open_seconds: ``Runtime.start`` on the stored data (storage, model, service).
        noop: the median no-op re-apply.
        changed: the median apply that changes one function.
        text_seconds: the bare encode of the changed function's text (its floor).
    """

    open_seconds: float
    noop: Applied
    changed: Applied
    text_seconds: float


async def reconcile(data: Path, pool: EmbedderPool, catalog: Catalog, *, namespace: str, repeats: int) -> Reconciled:
    """Open a runtime on ``data`` and time no-op and one-change applies, alternating the edit and the original."""
    settings = Settings(storage=StorageSettings(data=data), sync=SyncSettings(catalog=None))
    runtime = Runtime(settings, embedders=pool)
    start = time.perf_counter()
    await runtime.start()
    opened = time.perf_counter() - start
    planner = service_module.plan
    try:
        watch = Stopwatch()
        watch.wrap(service_module, "plan", "plan (hashes definitions)")
        store = runtime.service.index.store
        embedder = runtime.service.index.embedder
        watch.wrap(store, "hashes", "scroll hashes")
        watch.wrap(store, "upsert", "upsert")
        watch.wrap(embedder, "embed", "embed")
        # The stored catalog may be either version: the first apply settles it on the original.
        await apply_timed(runtime, namespace, fresh(catalog.functions), watch)
        noops, changes, last = [], [], catalog.functions
        for _ in range(repeats):
            noops.append(await apply_timed(runtime, namespace, fresh(last), watch))
            last = catalog.changed if last is catalog.functions else catalog.functions
            changes.append(await apply_timed(runtime, namespace, fresh(last), watch))
        text = template(settings.embedding.text)(catalog.changed_function)
        floor = one_text_seconds(embedder, text, repeats=max(5, repeats))
        del embedder.embed  # the wrapper was set on the instance: drop it
    finally:
        service_module.plan = planner
        await runtime.stop()
    return Reconciled(opened, median_applied(noops), median_applied(changes), floor)
