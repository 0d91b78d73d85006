"""The issue's targets as bench-quality prints them: the noisy-usage share and what has no figure."""

from __future__ import annotations

from benchmarks.quality_data import Scores
from benchmarks.quality_targets import cold_targets, kept_gain, noisy_targets


def _scores(hits: int, of: int = 10, *, first: bool = True) -> Scores:
    scores = Scores()
    for i in range(of):
        scores.add(["a", "x"] if i < hits and first else ["x", "y"], ["a"])
    return scores


def test_the_kept_gain_is_the_noisy_share_of_the_clean_gain_over_cold() -> None:
    cold, clean, noisy = _scores(2), _scores(6), _scores(5)
    assert kept_gain(cold, clean, noisy, 1) == 0.75
    assert kept_gain(cold, cold, noisy, 1) is None
    assert kept_gain(_scores(200, 1000), _scores(205, 1000), noisy, 1) is None  # a few requests: noise
    line = noisy_targets("Set", cold, clean, noisy, wrong=1, stored=10)[0]
    assert "R@1 75%" in line
    assert line.endswith("**not met**.")
    assert noisy_targets("Set", cold, clean, clean, wrong=1, stored=10)[0].endswith(": met.")


def test_without_a_gain_or_a_multi_tool_request_a_target_has_no_figure() -> None:
    cold = _scores(5)
    assert noisy_targets("Set", cold, cold, _scores(1), wrong=1, stored=10)[0].endswith(": n/a.")
    lines = cold_targets("apibench", "Set", {"dense": _scores(3), "bm25": _scores(4)}, cold)
    assert "Complete@10: n/a" in lines[1]
    assert lines[0].endswith(", met.")
