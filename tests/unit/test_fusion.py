"""Hybrid scoring (meaning, words, usage) and context fusion: pure functions, no model."""

from __future__ import annotations

import pytest

from router.catalog import FunctionDef, parse_function
from router.retrieval.fusion import context_weight, fuse, hybrid
from router.retrieval.scored import Candidate, ScoredFunction


def function(name: str) -> FunctionDef:
    return parse_function({"name": name, "description": f"{name} does things"}, where="test")


def candidate(name: str, cosine: float, lexical: float = 0.0, example: float | None = None) -> Candidate:
    return Candidate(function(name), cosine, lexical, example)


def scores(ranked: list[ScoredFunction]) -> dict[str, float]:
    return {f.function.name: round(f.score, 6) for f in ranked}


def names(ranked: list[ScoredFunction]) -> list[str]:
    return [f.function.name for f in ranked]


def test_score_mixes_cosine_with_lexical_relative_to_the_best() -> None:
    ranked = hybrid(
        [candidate("a", 0.6, lexical=10.0), candidate("b", 0.5, lexical=5.0), candidate("c", 0.4)],
        lexical_weight=0.25,
        example_weight=0.8,
    )
    assert scores(ranked) == {"a": 0.7, "b": 0.5, "c": 0.3}  # 0.75 * cosine + 0.25 * lexical / 10
    assert names(ranked) == ["a", "b", "c"]


def test_words_can_outrank_a_slightly_closer_meaning() -> None:
    ranked = hybrid(
        [candidate("close_meaning", 0.62, lexical=1.0), candidate("exact_words", 0.58, lexical=9.0)],
        lexical_weight=0.25,
        example_weight=0.8,
    )
    assert names(ranked) == ["exact_words", "close_meaning"]


def test_without_lexical_evidence_the_score_is_the_scaled_cosine() -> None:
    ranked = hybrid([candidate("a", 0.7), candidate("b", 0.2)], lexical_weight=0.25, example_weight=0.8)
    assert scores(ranked) == {"a": 0.525, "b": 0.15}


@pytest.mark.parametrize("weight", [0.0, 1.0])
def test_weights_at_the_ends_are_dense_only_and_lexical_only(weight: float) -> None:
    found = [candidate("dense", 0.9, lexical=1.0), candidate("words", 0.1, lexical=8.0)]
    ranked = hybrid(found, lexical_weight=weight, example_weight=0.8)
    assert names(ranked) == (["dense", "words"] if weight == 0.0 else ["words", "dense"])


def test_a_close_usage_example_lifts_its_function() -> None:
    found = [candidate("usual", 0.50), candidate("called_before", 0.45, example=0.95)]
    ranked = hybrid(found, lexical_weight=0.0, example_weight=0.8)
    assert names(ranked) == ["called_before", "usual"]
    assert scores(ranked)["called_before"] == pytest.approx(0.8 * 0.95)


def test_a_far_example_never_lowers_a_function() -> None:
    ranked = hybrid([candidate("a", 0.6, example=0.3)], lexical_weight=0.0, example_weight=0.8)
    assert scores(ranked) == {"a": 0.6}


def test_scores_stay_similarity_like() -> None:
    found = [candidate("best", 1.0, lexical=3.0, example=1.0), candidate("worst", -1.0)]
    ranked = hybrid(found, lexical_weight=0.25, example_weight=1.0)
    assert ranked[0].score == pytest.approx(1.0)
    assert -1.0 <= ranked[-1].score <= 1.0
    assert [f.score for f in ranked] == sorted((f.score for f in ranked), reverse=True)


def test_ties_break_by_name_so_rankings_are_stable() -> None:
    ranked = hybrid([candidate("b", 0.5), candidate("a", 0.5)], lexical_weight=0.25, example_weight=0.8)
    assert names(ranked) == ["a", "b"]


def test_no_candidates() -> None:
    assert hybrid([], lexical_weight=0.25, example_weight=0.8) == []


def scored(name: str, score: float) -> ScoredFunction:
    return ScoredFunction(function(name), score)


def test_context_nudges_but_the_new_turn_leads() -> None:
    new = [scored("search_flights", 0.60), scored("book_flight", 0.58)]
    recent = [scored("book_flight", 0.70), scored("search_flights", 0.40)]
    ranked = fuse(new, recent, weight=0.3)
    assert names(ranked) == ["book_flight", "search_flights"]
    assert scores(ranked)["book_flight"] == round((0.58 + 0.3 * 0.70) / 1.3, 6)


def test_a_function_missing_from_one_list_gets_that_lists_floor() -> None:
    ranked = fuse([scored("a", 0.5), scored("b", 0.4)], [scored("c", 0.9), scored("a", 0.2)], weight=0.5)
    assert scores(ranked) == {
        "a": round((0.5 + 0.5 * 0.2) / 1.5, 6),
        "b": round((0.4 + 0.5 * 0.2) / 1.5, 6),
        "c": round((0.4 + 0.5 * 0.9) / 1.5, 6),
    }


def test_no_context_or_zero_weight_keeps_the_new_turn_ranking() -> None:
    new = [scored("a", 0.5), scored("b", 0.4)]
    assert fuse(new, [], weight=0.3) == new
    assert fuse(new, [scored("b", 0.9)], weight=0.0) == new


@pytest.mark.parametrize(
    ("best", "expected"),
    [(0.1, 0.3), (0.2, 0.3), (0.25, 0.15), (0.3, 0.0), (0.8, 0.0)],
)
def test_context_counts_only_when_the_new_turn_matches_nothing_well(best: float, expected: float) -> None:
    found = [candidate("best", best), candidate("other", best - 0.1)]
    assert context_weight(found, weight=0.3, clear=0.3, vague=0.2) == pytest.approx(expected)


def test_a_close_usage_example_makes_a_turn_clear() -> None:
    found = [candidate("vague_text", 0.1, example=0.9)]
    assert context_weight(found, weight=0.3, clear=0.3, vague=0.2) == 0.0
    assert context_weight([], weight=0.3, clear=0.3, vague=0.2) == 0.3
