"""Benchmark runs record their load and CPU probes, and a run that is not comparable never replaces one that is."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.common import COMPARABLE_LOAD, Load, record_run
from benchmarks.recording import COMPARABLE_SPREAD, cpu_probe, vector_probe

HEADING = "## Sync (make bench-sync)"


def quiet() -> Load:
    return Load(start=(0.4, 0.5, 0.6), end=(1.1, 0.7, 0.6), probes=[0.30, 0.32, 0.31], vector_probes=[0.9, 1.0, 0.95])


def loaded() -> Load:
    return Load(
        start=(COMPARABLE_LOAD + 0.1, 3.0, 2.0), end=(4.0, 3.0, 2.0), probes=[0.30, 0.31], vector_probes=[0.9, 0.9]
    )


def slowed() -> Load:
    """Quiet by its load average, but a CPU probe took twice as long in the middle of the run."""
    return Load(start=(0.4, 0.5, 0.6), end=(0.9, 0.7, 0.6), probes=[0.30, 0.60, 0.31], vector_probes=[0.9, 0.9, 0.9])


def slowed_vectors() -> Load:
    """Quiet by its load average and its Python loop, but the matrix products took twice as long in one part."""
    return Load(start=(0.4, 0.5, 0.6), end=(0.9, 0.7, 0.6), probes=[0.30, 0.31, 0.30], vector_probes=[0.9, 1.8, 0.9])


def test_a_run_says_its_load_at_start_and_end_and_whether_it_is_comparable() -> None:
    assert quiet().comparable
    assert quiet().line().startswith("Comparable run: load average 0.40, 0.50, 0.60 at start, 1.10, 0.70, 0.60 at end")
    assert not loaded().comparable
    assert loaded().line().startswith("**Not comparable**: load average 1.60")
    assert "started above 1.5" in loaded().line()


def test_a_run_whose_cpu_probe_moved_is_not_comparable_whatever_its_load() -> None:
    assert quiet().spread < COMPARABLE_SPREAD
    line = quiet().line()
    assert "CPU probes over 3 timings (best of 3 each): a pure-Python loop 0.300-0.320 s (1.07x apart)" in line
    assert "float32 matrix products 0.900-1.000 s (1.11x apart)" in line
    for run in (slowed(), slowed_vectors()):
        assert run.spread == 2.0
        assert not run.comparable
        line = run.line()
        assert line.startswith("**Not comparable**: load average 0.40")
        assert "speed moved by more than" in line
    assert "a pure-Python loop 0.300-0.600 s (2.00x apart)" in slowed().line()
    assert "float32 matrix products 0.900-1.800 s (2.00x apart)" in slowed_vectors().line()


def test_a_run_probes_the_cpu_at_its_start_at_each_part_and_at_its_end() -> None:
    assert cpu_probe(loops=10_000) > 0
    assert vector_probe(products=2) > 0
    run = Load(start=(0.4, 0.5, 0.6), loops=10_000, products=2)
    assert len(run.probes) == 1
    run.probe()
    run.finish()
    assert len(run.probes) == len(run.vector_probes) == 3
    assert run.end is not None
    assert min(run.probes) > 0
    assert min(run.vector_probes) > 0


def test_a_slowed_run_never_replaces_a_comparable_one(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    assert record_run(results, HEADING, "quiet figures", quiet())
    assert not record_run(results, HEADING, "slowed figures", slowed())
    assert "slowed figures" not in results.read_text()


def test_a_loaded_run_never_replaces_a_comparable_one(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    assert record_run(results, HEADING, "quiet figures", quiet())
    assert not record_run(results, HEADING, "loaded figures", loaded())
    text = results.read_text()
    assert "quiet figures" in text
    assert "loaded figures" not in text
    assert record_run(results, HEADING, "quieter figures", quiet())
    assert "quiet figures" not in results.read_text()
    assert "quieter figures" in results.read_text()


def test_a_loaded_run_is_recorded_as_not_comparable_where_no_comparable_run_is(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    results.write_text("## Other (make other)\n\nkept\n")
    assert record_run(results, HEADING, "loaded figures", loaded())
    assert record_run(results, HEADING, "loaded again", loaded())
    text = results.read_text()
    assert "**Not comparable**" in text
    assert "loaded again" in text
    assert "loaded figures" not in text
    assert "kept" in text
    assert record_run(results, HEADING, "quiet figures", quiet())
    assert "Not comparable" not in results.read_text()


def test_the_matrix_probe_runs_on_one_blas_thread_whatever_the_process_set(monkeypatch: pytest.MonkeyPatch) -> None:
    from threadpoolctl import threadpool_info, threadpool_limits

    from benchmarks import recording

    seen: list[set[int]] = []

    def timed(work: Callable[[], None]) -> float:
        seen.append(blas())
        work()
        return 1.0

    monkeypatch.setattr(recording, "_best_of_three", timed)

    def blas() -> set[int]:
        return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}

    with threadpool_limits(2, user_api="blas"):
        before = blas()
        recording.vector_probe(products=1)
        after = blas()
    assert seen == [{1}]
    assert after == before  # the process's own setting is back
