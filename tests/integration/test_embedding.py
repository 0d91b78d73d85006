"""The embedding layer: both backends give the same vectors; unsupported models stay on PyTorch."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from router.embedding import DEFAULT_MODEL, Embedder, resolve_model

pytestmark = pytest.mark.integration

TEXTS = [
    "Find me a flight from Lisbon to Rome next Friday",
    "search_flights: Search available flight offers between two airports",
    "ok",
    "Quels sont les vols pour Paris demain ? " * 20,
]


@pytest.fixture(scope="module")
def torch_embedder() -> Embedder:
    return Embedder(DEFAULT_MODEL, backend="torch")


async def test_onnx_and_pytorch_give_the_same_vectors(embedder: Embedder, torch_embedder: Embedder) -> None:
    assert embedder.backend == "onnx"
    assert torch_embedder.backend == "torch"
    assert (embedder.dimension, embedder.max_tokens) == (torch_embedder.dimension, torch_embedder.max_tokens)
    onnx, reference = await embedder.embed(TEXTS), await torch_embedder.embed(TEXTS)
    assert onnx.dtype == np.float32
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)
    assert (onnx * reference).sum(axis=1).min() >= 0.999


async def test_queries_and_documents_share_one_vector_space(embedder: Embedder) -> None:
    documents = await embedder.embed(TEXTS)
    queries = await embedder.query(TEXTS)
    assert np.allclose(documents, queries, atol=1e-5)


async def test_large_inputs_report_progress_per_batch(embedder: Embedder) -> None:
    seen: list[tuple[int, int]] = []
    texts = [f"function number {i}" for i in range(150)]
    vectors = await embedder.embed(texts, progress=lambda done, total: seen.append((done, total)))
    assert vectors.shape == (150, embedder.dimension)
    assert seen[-1] == (150, 150)
    assert len(seen) == -(-150 // embedder.batch_size)


async def test_mixed_lengths_in_one_call_give_each_text_its_own_vector(embedder: Embedder) -> None:
    # Texts run in length groups and come back in the caller's order, each as if encoded alone.
    texts = [TEXTS[i % len(TEXTS)] + f" #{i}" for i in range(40)][::-1]
    together = embedder.encode(texts)
    alone = np.stack([embedder.encode([t])[0] for t in texts])
    assert together.shape == (40, embedder.dimension)
    assert (together * alone).sum(axis=1).min() >= 0.99999
    assert embedder.encode([]).shape == (0, embedder.dimension)


def test_a_model_onnx_cannot_reproduce_stays_on_pytorch(tmp_path: Path) -> None:
    copy = Path(shutil.copytree(resolve_model(DEFAULT_MODEL), tmp_path / "model"))
    (copy / "tokenizer.json").unlink()
    fallback = Embedder(str(copy), cache_dir=tmp_path / "cache")
    assert fallback.backend == "torch"
    assert fallback.encode(["hello"]).shape == (1, 384)
    with pytest.raises(ValueError, match="ONNX backend"):
        Embedder(str(copy), backend="onnx", cache_dir=tmp_path / "cache")


def test_the_first_use_exports_and_verifies_the_onnx_model(tmp_path: Path) -> None:
    fresh = Embedder(DEFAULT_MODEL, cache_dir=tmp_path / "cache")
    assert fresh.backend == "onnx"
    (verified,) = (tmp_path / "cache").glob("*/verified.json")
    assert '"cosine": ' in verified.read_text()
