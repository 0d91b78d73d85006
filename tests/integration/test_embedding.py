"""The embedding layer: both backends give the same vectors; unsupported models stay on PyTorch."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from threadpoolctl import threadpool_info

from router.embedding import DEFAULT_MODEL, Embedder, Vectors, backends, resolve_model, selection
from router.embedding.backends import TorchModel

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


@pytest.fixture(scope="module")
def bare() -> Vectors:
    """The bare library's fp32 vectors of ``TEXTS``: what every backend must reproduce."""
    model = SentenceTransformer(resolve_model(DEFAULT_MODEL), device="cpu")
    return np.asarray(model.encode(TEXTS, normalize_embeddings=True, show_progress_bar=False), dtype=np.float32)


@pytest.fixture
def tiny_workloads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Time the real backends on a few texts only: the mechanism is under test here, not the figures."""
    work = {"query": [["ok"], ["a flight to Rome"]], "batch": [["ok", "a flight to Rome"]], "catalog": [TEXTS[:2]]}
    monkeypatch.setattr(selection, "workloads", lambda **_options: work)


@pytest.mark.parametrize(
    ("forced", "name"), [("torch", "torch"), ("traced", "torch-traced"), ("onnx", "onnx"), ("bf16", "torch-bf16")]
)
def test_every_backend_gives_the_fp32_vectors(forced: str, name: str, bare: Vectors, tmp_path: Path) -> None:
    embedder = Embedder(DEFAULT_MODEL, backend=forced, cache_dir=tmp_path / "cache")  # type: ignore[arg-type]
    try:
        assert embedder.backend == name
        assert embedder.describe() == {
            "model": DEFAULT_MODEL,
            "dimension": 384,
            "backends": {"query": name, "batch": name, "catalog": name},
            "lanes": 1 if name == "onnx" else os.cpu_count(),
            "timings_ms": {},
        }
        for vectors in (embedder.encode(TEXTS), np.stack([embedder.encode([t])[0] for t in TEXTS])):
            assert vectors.dtype == np.float32
            assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
            assert (vectors * bare).sum(axis=1).min() >= selection.AGREEMENT
    finally:
        embedder.close()


@pytest.mark.usefixtures("tiny_workloads")
def test_auto_times_the_backends_once_and_later_starts_reuse_the_choice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bare: Vectors
) -> None:
    first = Embedder(DEFAULT_MODEL, cache_dir=tmp_path / "cache")
    described = first.describe()
    first.close()
    assert set(described["backends"]) == {"query", "batch", "catalog"}
    assert set(described["timings_ms"]["query"]) >= {"torch", "torch-traced", "onnx"}
    assert all(ms > 0 for ms in described["timings_ms"]["catalog"].values())
    assert first.backend == described["backends"]["query"]
    (verified,) = (tmp_path / "cache").glob("*/verified.json")
    assert '"cosine": ' in verified.read_text()
    assert len(list((tmp_path / "cache").glob("*/backends-*.json"))) == 1

    def no_timing(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a cached choice must not be measured again")

    monkeypatch.setattr(selection, "select", no_timing)
    again = Embedder(DEFAULT_MODEL, cache_dir=tmp_path / "cache")
    try:
        assert again.describe() == described
        assert (again.encode(TEXTS) * bare).sum(axis=1).min() >= selection.AGREEMENT
        with pytest.raises(AssertionError, match="measured again"):
            Embedder(DEFAULT_MODEL, cache_dir=tmp_path / "cache", remeasure=True)
    finally:
        again.close()


@pytest.mark.usefixtures("tiny_workloads")
def test_a_model_the_tracer_cannot_follow_is_measured_without_its_traced_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def untraceable(_model: TorchModel) -> None:
        raise RuntimeError("control flow on tensor values")

    monkeypatch.setattr(TorchModel, "trace", untraceable)
    embedder = Embedder(DEFAULT_MODEL, cache_dir=tmp_path / "cache")
    try:
        assert "torch-traced" not in embedder.describe()["timings_ms"]["query"]
        assert "control flow on tensor values" in embedder.choice.rejected["torch-traced"]
        with pytest.raises(RuntimeError, match="control flow"):
            Embedder(DEFAULT_MODEL, backend="traced", cache_dir=tmp_path / "cache")
    finally:
        embedder.close()


def test_bf16_pads_lengths_to_a_few_and_keeps_prompts(bare: Vectors) -> None:
    model = TorchModel.load(resolve_model(DEFAULT_MODEL), device="cpu", threads=1, batch_size=8)
    lengths: list[int] = []
    hook = model.model[0].register_forward_pre_hook(lambda _m, args: lengths.append(args[0]["input_ids"].shape[1]))
    try:
        vectors = model.bf16(TEXTS)
        assert lengths
        assert all(n % backends.BF16_LENGTH_STEP == 0 for n in lengths)
        assert (vectors * bare).sum(axis=1).min() >= selection.AGREEMENT
        model.model.prompts, model.model.default_prompt_name = {"query": "query: "}, "query"
        prompted = model.bf16(TEXTS[:1])
        assert (prompted * model.fp32(TEXTS[:1])).sum() >= selection.AGREEMENT
        assert (prompted * bare[:1]).sum() < selection.AGREEMENT  # the prompt did change the text
    finally:
        hook.remove()


def test_tracing_refuses_pipelines_the_traced_run_would_change() -> None:
    model = TorchModel.load(resolve_model(DEFAULT_MODEL), device="cpu", threads=1, batch_size=8)
    model.model.prompts, model.model.default_prompt_name = {"query": "query: "}, "query"
    with pytest.raises(ValueError, match="default prompt"):
        model.trace()
    model.model.default_prompt_name = None
    model.model[0].auto_model.config.output_hidden_states = True
    with pytest.raises(ValueError, match="every layer"):
        model.trace()
    model.model[0].auto_model.config.output_hidden_states = False
    model.trace()
    assert (model.traced(TEXTS) * model.fp32(TEXTS)).sum(axis=1).min() >= selection.AGREEMENT


def test_a_graph_that_changes_the_vectors_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    real = backends._hidden_states

    def reversed_features(model: object, names: tuple[str, ...]) -> torch.nn.Module:
        class Reversed(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.inner = real(model, names)

            def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
                return torch.flip(self.inner(*tensors), dims=[-1])

        return Reversed().eval()

    monkeypatch.setattr(backends, "_hidden_states", reversed_features)
    model = TorchModel.load(resolve_model(DEFAULT_MODEL), device="cpu", threads=1, batch_size=8)
    with pytest.raises(ValueError, match="differ from the eager run"):
        model.trace()
    with pytest.raises(ValueError, match="differ from the eager run"):
        model.traced(["a text"])  # no graph was kept: the next run tries, and refuses, again


@pytest.mark.usefixtures("tiny_workloads")
def test_a_cached_traced_choice_that_no_longer_traces_is_measured_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def all_traced(candidates: object, _work: object, **_options: object) -> selection.BackendChoice:
        return selection.BackendChoice.forced("torch-traced")

    monkeypatch.setattr(selection, "select", all_traced)
    Embedder(DEFAULT_MODEL, cache_dir=tmp_path / "cache").close()
    measured = []

    def untraceable(_model: TorchModel) -> None:
        raise RuntimeError("control flow on tensor values")

    def eager(candidates: dict[str, object], _work: object, **_options: object) -> selection.BackendChoice:
        measured.append(sorted(candidates))
        return selection.BackendChoice.forced("torch")

    monkeypatch.setattr(TorchModel, "trace", untraceable)
    monkeypatch.setattr(selection, "select", eager)
    embedder = Embedder(DEFAULT_MODEL, cache_dir=tmp_path / "cache")
    try:
        assert embedder.backend == "torch"
        assert len(measured) == 1
        assert "torch" in measured[0]
        assert "torch-traced" not in measured[0]
    finally:
        embedder.close()


async def test_queries_and_documents_share_one_vector_space(embedder: Embedder) -> None:
    # Queries and documents may run on different backends: they agree as closely as backends must.
    documents = await embedder.embed(TEXTS)
    queries = await embedder.query(TEXTS)
    alone = np.stack([await embedder.query([f"{t} "]) for t in TEXTS])[:, 0]
    assert (documents * queries).sum(axis=1).min() >= selection.AGREEMENT
    assert (documents * alone).sum(axis=1).min() >= selection.AGREEMENT


async def test_queued_queries_run_on_lanes_of_fewer_threads_with_the_same_vectors(bare: Vectors) -> None:
    embedder = Embedder(DEFAULT_MODEL, backend="torch", threads=2, lanes=2)
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
        assert (np.concatenate(together) * bare).sum(axis=1).min() >= selection.AGREEMENT
        assert embedder.encode(TEXTS[:1]).shape == (1, 384)
        assert torch.get_num_threads() == 2  # documents on the calling thread: every thread
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
    # Texts run in length groups and come back in the caller's order, each as if encoded alone.
    texts = [TEXTS[i % len(TEXTS)] + f" #{i}" for i in range(40)][::-1]
    together = embedder.encode(texts)
    alone = np.stack([embedder.encode([t])[0] for t in texts])
    assert together.shape == (40, embedder.dimension)
    # A batch and one text may run on different backends (bf16 for batches on a CPU with AMX),
    # each within AGREEMENT of fp32; a text given another's vector would be far below.
    assert (together * alone).sum(axis=1).min() >= 2 * selection.AGREEMENT - 1
    assert embedder.encode([]).shape == (0, embedder.dimension)


@pytest.mark.usefixtures("tiny_workloads")
def test_a_model_onnx_cannot_reproduce_stays_on_pytorch(tmp_path: Path) -> None:
    copy = Path(shutil.copytree(resolve_model(DEFAULT_MODEL), tmp_path / "model"))
    (copy / "tokenizer.json").unlink()
    fallback = Embedder(str(copy), cache_dir=tmp_path / "cache")
    assert fallback.backend in {"torch", "torch-traced"}
    assert set(fallback.describe()["backends"].values()) <= backends.TORCH_RUNS
    assert "onnx" in fallback.choice.rejected
    assert fallback.encode(["hello"]).shape == (1, 384)
    with pytest.raises(ValueError, match="ONNX backend"):
        Embedder(str(copy), backend="onnx", cache_dir=tmp_path / "cache")


def test_a_loaded_model_leaves_numpy_one_blas_thread(torch_embedder: Embedder) -> None:
    # OpenBLAS threads spinning after a product would take a core from the model.
    blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas
    assert all(pool["num_threads"] == 1 for pool in blas)
