"""Choosing a backend per shape of work by measurement, with a fake clock and fake backends."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from router.embedding.batching import Vectors
from router.embedding.selection import (
    BackendChoice,
    cache_key,
    choose,
    cpu_fingerprint,
    cpu_flags,
    cpu_supports_bf16,
    load_choice,
    measure,
    save_choice,
    select,
    workloads,
)


class FakeClock:
    """Time advances only when a fake backend works."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def vector(text: str, *, noise: float = 0.0) -> Vectors:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    v = np.random.default_rng(seed).normal(size=16).astype(np.float32)
    if noise:
        v += np.random.default_rng(seed + 1).normal(scale=noise, size=16).astype(np.float32)
    return np.asarray(v / np.linalg.norm(v), dtype=np.float32)


Cost = Callable[[list[str]], float]


def backend(clock: FakeClock, cost: Cost, *, log: list[str] | None = None, name: str = "", noise: float = 0.0):  # type: ignore[no-untyped-def]
    """A fake backend: its vectors depend on the text only; each call costs ``cost(texts)`` seconds."""

    def run(texts: list[str]) -> Vectors:
        clock.now += cost(texts)
        if log is not None:
            log.append(name)
        return np.stack([vector(t, noise=noise) for t in texts]) if texts else np.zeros((0, 16), np.float32)

    return run


def per_shape(single: float, batched: float, catalog: float) -> Cost:
    """Seconds per text: ``single`` alone, ``batched`` in a query batch, ``catalog`` per function text."""

    def cost(texts: list[str]) -> float:
        if ":" in texts[0]:
            return catalog * len(texts)
        return single if len(texts) == 1 else batched * len(texts)

    return cost


WORK = workloads(batch_size=16)


def test_each_shape_gets_the_fastest_backend_that_agrees() -> None:
    # The figures of a CPU with AMX: fp32 best alone and for catalogs, bf16 best for query batches.
    clock = FakeClock()
    candidates = {
        "torch": backend(clock, per_shape(0.007, 0.0075, 0.0028)),
        "onnx": backend(clock, per_shape(0.014, 0.010, 0.015)),
        "torch-bf16": backend(clock, per_shape(0.009, 0.0037, 0.0030)),
    }
    choice = select(candidates, WORK, rounds=5, clock=clock)
    assert choice.backends == {"query": "torch", "batch": "torch-bf16", "catalog": "torch"}
    assert choice.timings_ms["query"] == pytest.approx({"torch": 7.0, "onnx": 14.0, "torch-bf16": 9.0})
    assert choice.timings_ms["batch"]["torch-bf16"] == pytest.approx(3.7)
    assert choice.rejected == {}
    assert min(choice.agreement.values()) > 0.9999


def test_a_backend_barely_faster_than_fp32_does_not_replace_it() -> None:
    clock = FakeClock()
    candidates = {
        "torch": backend(clock, per_shape(0.007, 0.007, 0.003)),
        "onnx": backend(clock, per_shape(0.0066, 0.0066, 0.0029)),
    }
    assert set(select(candidates, WORK, rounds=5, clock=clock).backends.values()) == {"torch"}


def test_a_clearly_faster_backend_replaces_fp32() -> None:
    clock = FakeClock()
    candidates = {
        "torch": backend(clock, per_shape(0.014, 0.014, 0.015)),
        "onnx": backend(clock, per_shape(0.007, 0.007, 0.003)),
    }
    assert set(select(candidates, WORK, rounds=5, clock=clock).backends.values()) == {"onnx"}


def test_one_slow_round_of_fp32_does_not_flip_the_choice() -> None:
    # A burst of load elsewhere during one round: the median and the best round both ignore it.
    samples = {"torch": [0.0070, 0.0071, 0.070, 0.0069, 0.0072], "onnx": [0.0066, 0.0065, 0.0066, 0.0067, 0.0066]}
    assert choose(samples) == "torch"
    # A candidate that is faster only by its lucky best round is not clearly faster either.
    assert choose({"torch": [0.007] * 5, "onnx": [0.004, 0.0069, 0.0069, 0.0069, 0.0069]}) == "torch"
    assert choose({"torch": [0.007] * 5, "onnx": [0.004, 0.006, 0.006, 0.006, 0.0069]}) == "onnx"


def test_a_backend_whose_vectors_differ_is_never_chosen() -> None:
    clock = FakeClock()
    candidates = {
        "torch": backend(clock, per_shape(0.007, 0.007, 0.003)),
        "onnx": backend(clock, per_shape(0.001, 0.001, 0.001), noise=0.05),
    }
    choice = select(candidates, WORK, rounds=3, clock=clock)
    assert set(choice.backends.values()) == {"torch"}
    assert "onnx" in choice.rejected
    assert "onnx" not in choice.timings_ms["query"]
    assert choice.agreement["onnx"] < 0.9999


def test_candidates_run_interleaved_in_a_rotating_order() -> None:
    clock, log = FakeClock(), []
    names = ["torch", "onnx", "torch-bf16"]
    candidates = {n: backend(clock, per_shape(0.001, 0.001, 0.001), log=log, name=n) for n in names}
    work = {"batch": [["a question", "another question"]]}
    samples = measure(candidates, work, rounds=3, clock=clock)
    assert log[:3] == names  # the warm-up
    assert log[3:] == ["torch", "onnx", "torch-bf16", "onnx", "torch-bf16", "torch", "torch-bf16", "torch", "onnx"]
    assert samples["batch"]["onnx"] == pytest.approx([0.001] * 3)


def test_a_choice_is_cached_for_one_fingerprint(tmp_path: Path) -> None:
    choice = BackendChoice(
        {"query": "torch", "batch": "torch-bf16", "catalog": "torch"},
        {"query": {"torch": 6.8}},
        {"torch": 1.0},
        {"onnx": "slow"},
    )
    fingerprint = cpu_fingerprint(threads=2, text="model name\t: Xeon\nflags\t\t: avx2 amx_bf16\n")
    path = tmp_path / "model" / "backends.json"
    save_choice(path, choice, fingerprint)
    assert load_choice(path, fingerprint) == choice
    assert load_choice(path, {**fingerprint, "threads": 4}) is None
    assert load_choice(tmp_path / "missing.json", fingerprint) is None
    path.write_text(json.dumps({"fingerprint": fingerprint, "choice": {"backends": {"query": "torch"}}}))
    assert load_choice(path, fingerprint) is None
    path.write_text("{not json")
    assert load_choice(path, fingerprint) is None


def test_the_cache_key_changes_with_the_cpu_its_flags_and_the_threads() -> None:
    xeon = cpu_fingerprint(threads=2, text="model name\t: Xeon\nflags\t\t: avx2 amx_bf16\n")
    keys = {
        cache_key("model", xeon),
        cache_key("model", cpu_fingerprint(threads=2, text="model name\t: EPYC\nflags\t\t: avx2 amx_bf16\n")),
        cache_key("model", cpu_fingerprint(threads=2, text="model name\t: Xeon\nflags\t\t: avx2\n")),
        cache_key("model", cpu_fingerprint(threads=1, text="model name\t: Xeon\nflags\t\t: avx2 amx_bf16\n")),
        cache_key("other model", xeon),
    }
    assert len(keys) == 5
    assert xeon["versions"]["torch"] != "absent"


def test_bf16_is_a_candidate_only_with_bf16_instructions() -> None:
    assert cpu_flags("processor\t: 0\nflags\t\t: fpu avx2 amx_bf16 amx_tile\n") == {
        "fpu",
        "avx2",
        "amx_bf16",
        "amx_tile",
    }
    assert cpu_supports_bf16({"avx2", "amx_bf16"})
    assert cpu_supports_bf16({"avx512f", "avx512_bf16"})
    assert not cpu_supports_bf16({"avx2", "avx512f"})
    assert cpu_flags("") == set()


def test_a_forced_choice_has_no_timings() -> None:
    forced = BackendChoice.forced("onnx")
    assert forced.backends == {"query": "onnx", "batch": "onnx", "catalog": "onnx"}
    assert forced.timings_ms == {}
    assert "(forced)" in forced.table()[0]
