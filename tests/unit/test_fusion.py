"""Hybrid scoring (meaning, words, usage) and context fusion: pure functions, no model."""

from __future__ import annotations

import numpy as np
import pytest

from router.retrieval.context import context_weight, fuse, rank_turn
from router.retrieval.fusion import Weights, adaptive, hybrid, lexical_share, peak
from router.retrieval.scored import Candidate, Ranked


def candidate(name: str, cosine: float, lexical: float = 0.0, example: float | None = None) -> Candidate:
    return Candidate(name, cosine, lexical, example)


def scores(ranked: list[Ranked]) -> dict[str, float]:
    return {f.name: round(f.score, 6) for f in ranked}


def names(ranked: list[Ranked]) -> list[str]:
    return [f.name for f in ranked]


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


def scored(name: str, score: float) -> Ranked:
    return Ranked(name, score)


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


def test_peak_is_how_far_the_best_stands_out_and_flat_scores_do_not() -> None:
    assert peak(np.array([10.0, 1.0, 1.0, 1.0])) > 1.5
    # Differences far below the best score are noise, not a peak.
    assert peak(np.array([3.0, 2.99, 2.98, 2.97])) < 0.2
    assert peak(np.array([0.5])) == 0.0


def test_words_that_single_one_function_out_earn_a_large_lexical_share() -> None:
    decisive = [
        candidate("named", 0.50, lexical=9.0),
        *(candidate(f"f{i}", 0.48 - i / 100, lexical=0.5) for i in range(8)),
    ]
    shared = [candidate("a", 0.60, lexical=2.0), *(candidate(f"f{i}", 0.45 - i / 100, lexical=1.98) for i in range(8))]
    _, loud = adaptive(decisive, example_weight=0.9, lexical_weight=0.35)
    ranked, quiet = adaptive(shared, example_weight=0.9, lexical_weight=0.35)
    assert loud.lexical > 0.2
    assert quiet.lexical < 0.1
    assert loud.dense + loud.lexical == pytest.approx(1.0)
    assert names(ranked)[0] == "a"


def test_a_close_usage_example_leaves_little_to_the_words() -> None:
    found = [candidate("called_before", 0.40, lexical=1.0, example=0.95), candidate("wordy", 0.45, lexical=9.0)]
    found += [candidate(f"f{i}", 0.3, lexical=0.5) for i in range(6)]
    ranked, weights = adaptive(found, example_weight=0.9, lexical_weight=0.35)
    assert names(ranked)[0] == "called_before"
    assert weights.lexical < 0.05
    assert weights.usage == 0.9
    assert scores(ranked)["called_before"] == pytest.approx(
        (1 - weights.lexical) * 0.9 * 0.95 + weights.lexical / 9, abs=1e-6
    )


@pytest.mark.parametrize("words", [0.0, 0.5, 1.0])
def test_a_close_stored_request_silences_the_words_only_as_far_as_they_had_missed_its_function(
    words: float,
) -> None:
    def found(fit: float) -> list[Candidate]:
        called = Candidate("called_before", 0.40, 1.0, 0.95, "stored request", fit)
        others = [candidate(f"f{i}", 0.3, lexical=0.5) for i in range(6)]
        return [called, candidate("wordy", 0.45, lexical=9.0), *others]

    ranked, weights = adaptive(found(words), example_weight=0.9, lexical_weight=0.35)
    semantic = np.array([0.9 * 0.95, 0.45, *[0.3] * 6])
    lexical = np.array([1.0, 9.0, *[0.5] * 6])
    cold = lexical_share(semantic, lexical, maximum=0.35)
    # The stored request speaks for 0.95 of this one where the words had missed its function
    # entirely (it is the only stored request around, so its fit is also the typical one).
    assert weights.lexical == pytest.approx(cold * (1 - 0.95 * (1 - words**3)))
    assert weights.usage == 0.9
    assert names(ranked)[0] == "called_before"
    less, more = (adaptive(found(fit), example_weight=0.9, lexical_weight=0.35)[1].lexical for fit in (0.2, 0.8))
    assert less < more


def test_the_words_keep_their_share_for_a_request_they_name_beside_a_twin_called_before() -> None:
    # A request near one stored for a twin, whose words name the other: the words found the
    # twin for its stored request, so they still count here and pick the function named.
    twin = Candidate("get_stock_price", 0.32, 4.0, 0.5, "stock price of Apple?", 1.0)
    named = candidate("stock_price.get", 0.35, lexical=9.0)
    found = [twin, named, *(candidate(f"f{i}", 0.25 - i / 100, lexical=1.0) for i in range(6))]
    ranked, _ = adaptive(found, example_weight=0.9, lexical_weight=0.35)
    assert names(ranked)[0] == "stock_price.get"
    missed = Candidate("get_stock_price", 0.32, 4.0, 0.5, "stock price of Apple?", 0.0)
    assert names(adaptive([missed, *found[1:]], example_weight=0.9, lexical_weight=0.35)[0])[0] == "get_stock_price"


def test_words_that_found_one_stored_request_by_luck_do_not_overrule_it() -> None:
    # Twins sharing their words: the words found the closest stored request's function, but
    # the stored requests around this one show that they usually miss, so the request leads.
    def found(typical: float) -> list[Candidate]:
        called = Candidate("mobilenet_v2_100", 0.35, 2.0, 0.7, "classify this photo", 1.0)
        wordy = Candidate("mobilenet_v2_140", 0.5, 8.0, 0.5, "label images", typical)
        others = [Candidate(f"net{i}", 0.3, 4.0, 0.45, "an image", typical) for i in range(5)]
        return [called, wordy, *others]

    semantic = np.array([0.9 * 0.7, 0.5, *[0.9 * 0.45] * 5])
    lexical = np.array([2.0, 8.0, *[4.0] * 5])
    cold = lexical_share(semantic, lexical, maximum=0.35)
    ranked, weights = adaptive(found(0.1), example_weight=0.9, lexical_weight=0.35)
    assert weights.lexical == pytest.approx(cold * (1 - 0.7 * (1 - 0.1**2)))
    assert names(ranked)[0] == "mobilenet_v2_100"
    # Where the words usually find the functions called, the same request leaves them their share.
    trusted, weights = adaptive(found(1.0), example_weight=0.9, lexical_weight=0.35)
    assert weights.lexical == pytest.approx(cold)
    assert names(trusted)[0] == "mobilenet_v2_140"


def test_no_lexical_evidence_means_no_lexical_share() -> None:
    share = lexical_share(np.array([0.5, 0.4]), np.array([0.0, 0.0]), maximum=0.35)
    assert share == 0.0
    assert adaptive([], example_weight=0.9) == ([], Weights(dense=1.0, lexical=0.0, usage=0.0))


def test_a_vague_turn_follows_its_context_and_its_words_count_less() -> None:
    new = [candidate("cancel_booking", 0.10, lexical=4.7), candidate("book_flight", 0.21, lexical=2.2)]
    new += [candidate(f"f{i}", 0.05, lexical=0.1) for i in range(4)]
    recent = [candidate("book_flight", 0.46), candidate("cancel_booking", 0.40), candidate("search_flights", 0.45)]
    ranking = rank_turn(
        [new, recent], lexical_weight=0.35, example_weight=0.9, context_weight=0.3, clear=0.3, vague=0.2
    )
    assert names(ranking.functions)[0] == "book_flight"
    assert ranking.context_weight == pytest.approx(0.3 * (0.3 - 0.21) / 0.1)
    clear = rank_turn([new], lexical_weight=0.35, example_weight=0.9, context_weight=0.3, clear=0.3, vague=0.2)
    assert clear.context_weight == 0.0
    assert clear.recent == []


def test_a_context_that_matches_no_better_than_the_turn_does_not_count() -> None:
    vague = [candidate("cancel_booking", 0.25, lexical=2.0), *(candidate(f"f{i}", 0.05) for i in range(4))]
    ramp = context_weight(vague, weight=0.3, clear=0.3, vague=0.2)
    assert ramp == pytest.approx(0.3 * (0.3 - 0.25) / 0.1)
    # The context's weight grows with how much better it matches, relative to the turn: full from twice.
    assert context_weight(vague, weight=0.3, clear=0.3, vague=0.2, recent=[candidate("book_flight", 0.25)]) == 0.0
    halfway = [candidate("book_flight", 0.375)]
    assert context_weight(vague, weight=0.3, clear=0.3, vague=0.2, recent=halfway) == pytest.approx(ramp / 2)
    assert context_weight(vague, weight=0.3, clear=0.3, vague=0.2, recent=[candidate("book_flight", 0.6)]) == ramp
    recent = [candidate("book_flight", 0.26), candidate("cancel_booking", 0.24)]
    ranking = rank_turn(
        [vague, recent], lexical_weight=0.35, example_weight=0.9, context_weight=0.3, clear=0.3, vague=0.2
    )
    # Without the comparison the context would have lifted book_flight over the turn's own choice.
    assert ranking.context_weight == pytest.approx(ramp * 0.01 / 0.25)
    assert names(ranking.functions)[0] == "cancel_booking"
