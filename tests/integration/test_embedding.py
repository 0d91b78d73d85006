"""The embedding layer: the bare library's vectors, on lanes under load, off the event loop."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from threadpoolctl import threadpool_info

from router.embedding import DEFAULT_MODEL, Embedder, LocalEmbedder, Vectors, resolve_model

pytestmark = pytest.mark.integration

TEXTS = [
    "Find me a flight from Lisbon to Rome next Friday",
    "search_flights: Search available flight offers between two airports",
    "ok",
    "Quels sont les vols pour Paris demain ? " * 20,
]
# Batched and alone, the same fp32 model: only floating-point summation order differs.
SAME = 0.9999


@pytest.fixture(scope="module")
def bare() -> Vectors:
    """The bare library's fp32 vectors of ``TEXTS``: what every path of the embedder must give."""
    model = SentenceTransformer(resolve_model(DEFAULT_MODEL), device="cpu")
    return np.asarray(model.encode(TEXTS, normalize_embeddings=True, show_progress_bar=False), dtype=np.float32)


async def test_queries_documents_and_scripts_give_the_bare_librarys_vectors(embedder: Embedder, bare: Vectors) -> None:
    documents = await embedder.embed(TEXTS)
    queries = await embedder.query(TEXTS)
    alone = np.concatenate([await embedder.query([f"{t} "]) for t in TEXTS])
    for vectors in (documents, queries, alone, embedder.encode(TEXTS)):
        assert vectors.dtype == np.float32
        assert (vectors * bare).sum(axis=1).min() >= SAME


async def test_queued_queries_run_on_lanes_of_fewer_threads_with_the_same_vectors(bare: Vectors) -> None:
    embedder = LocalEmbedder(DEFAULT_MODEL, threads=2, lanes=2)
    calls: list[tuple[str, int, int]] = []
    embedder.observers.append(
        lambda _kind, texts, _seconds: calls.append((threading.current_thread().name, torch.get_num_threads(), texts))
    )
    try:
        await embedder.query(["warm up"])
        assert [(threads, texts) for _, threads, texts in calls] == [(2, 1)]  # alone: every thread
        calls.clear()
        together = await asyncio.gather(*(embedder.query([t]) for t in TEXTS))
        first, *queued = calls
        assert first[1:] == (2, 1)  # found the lanes idle
        assert {threads for _, threads, _ in queued} == {1}  # queued behind it, then shared the cores
        assert {lane for lane, _, _ in queued} == {"embed-0_0", "embed-1_0"}
        assert sum(texts for _, _, texts in queued) == len(TEXTS) - 1
        assert (np.concatenate(together) * bare).sum(axis=1).min() >= SAME
    finally:
        embedder.close()


async def test_large_inputs_report_progress_per_batch(embedder: Embedder) -> None:
    seen: list[tuple[int, int]] = []
    texts = [f"function number {i}" for i in range(150)]
    vectors = await embedder.embed(texts, progress=lambda done, total: seen.append((done, total)))
    assert vectors.shape == (150, embedder.dimension)
    assert seen[-1] == (150, 150)
    assert len(seen) == -(-150 // embedder.batch_size)


async def test_mixed_lengths_in_one_call_give_each_text_its_own_vector(embedder: Embedder) -> None:
    # Texts run in length order and come back in the caller's order, each as if encoded alone.
    texts = [TEXTS[i % len(TEXTS)] + f" #{i}" for i in range(40)][::-1]
    together = embedder.encode(texts)
    alone = np.stack([embedder.encode([t])[0] for t in texts])
    assert together.shape == (40, embedder.dimension)
    assert (together * alone).sum(axis=1).min() >= SAME
    assert embedder.encode([]).shape == (0, embedder.dimension)


def test_a_loaded_model_leaves_numpy_one_blas_thread(embedder: Embedder) -> None:
    # OpenBLAS threads spinning after a product would take a core from the model.
    blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas
    assert all(pool["num_threads"] == 1 for pool in blas)
