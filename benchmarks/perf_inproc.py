"""Floors measured in the benchmark process, and the reconcile alone (no HTTP) on a stopped server's data.

Floors are the bare library (``benchmarks.perf_floor.BareModel``: sentence-transformers, fp32),
never the router's own ``Embedder``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import Applied, Stopwatch, apply_timed, median_applied
from benchmarks.perf_floor import BareModel
from benchmarks.perf_store import Catalog
from router.catalog.functions import FunctionDef
from router.embedding import EmbedderPool
from router.retrieval.texts import template
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings, SyncSettings
from sync import diff as diff_module

__all__ = [
    "PARTS",
    "Reconciled",
    "encode_rate",
    "floor_sample",
    "fresh",
    "reconcile",
]

PARTS = ("scroll hashes", "plan (fingerprints, hashes what changed)", "embed", "upsert")


def floor_sample(texts: Sequence[str], *, most: int) -> list[str]:
    """The catalog's texts sorted by length (as the reconcile sorts them), every k-th when over ``most``.

    Every k-th text of the sorted list keeps the distribution of lengths, which sets the cost.
    """
    ordered = sorted(texts, key=len)
    step = max(1, math.ceil(len(ordered) / most))
    return ordered[::step]


async def encode_rate(bare: BareModel, texts: Sequence[str], *, label: str) -> float:
    """Texts per second of the bare library's batch encode of ``texts`` (off the event loop)."""
    return await asyncio.to_thread(bare.rate, texts, label=label)


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
        text_seconds: the bare library's encode of the changed function's text (its floor).
    """

    open_seconds: float
    noop: Applied
    changed: Applied
    text_seconds: float


async def reconcile(
    data: Path, pool: EmbedderPool, bare: BareModel, catalog: Catalog, *, namespace: str, repeats: int
) -> Reconciled:
    """Open a runtime on ``data`` and time no-op and one-change applies, alternating the edit and the original."""
    settings = Settings(storage=StorageSettings(data=data), sync=SyncSettings(catalog=None))
    runtime = Runtime(settings, embedders=pool)
    start = time.perf_counter()
    await runtime.start()
    opened = time.perf_counter() - start
    planner, known_plan = diff_module.plan, diff_module.Known.plan
    try:
        watch = Stopwatch()
        # The plan against the stored hashes (the first apply) or against what this writer wrote (the rest).
        watch.wrap(diff_module, "plan", PARTS[1])
        watch.wrap(diff_module.Known, "plan", PARTS[1])
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
        floor = bare.one_median(text, repeats=max(5, repeats))
        del embedder.embed  # the wrapper was set on the instance: drop it
    finally:
        diff_module.plan = planner
        diff_module.Known.plan = known_plan  # type: ignore[method-assign]
        await runtime.stop()
    return Reconciled(opened, median_applied(noops), median_applied(changes), floor)
