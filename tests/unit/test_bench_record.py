"""Benchmark runs record their load, and a run on a loaded machine never replaces a comparable one."""

from __future__ import annotations

from pathlib import Path

from benchmarks.common import COMPARABLE_LOAD, Load, record_run

HEADING = "## Sync (make bench-sync)"


def quiet() -> Load:
    return Load(start=(0.4, 0.5, 0.6), end=(1.1, 0.7, 0.6))


def loaded() -> Load:
    return Load(start=(COMPARABLE_LOAD + 0.1, 3.0, 2.0), end=(4.0, 3.0, 2.0))


def test_a_run_says_its_load_at_start_and_end_and_whether_it_is_comparable() -> None:
    assert quiet().comparable
    assert quiet().line().startswith("Comparable run: load average 0.40, 0.50, 0.60 at start, 1.10, 0.70, 0.60 at end")
    assert not loaded().comparable
    assert loaded().line().startswith("**Not comparable**: load average 1.60")


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
