"""Hybrid scoring (meaning, words, usage) and context fusion: pure functions, no model."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from router.catalog.functions import parse_function
from router.retrieval.companions import with_companions
from router.retrieval.context import (
    Found,
    TurnQueries,
    rank_turn,
    take_turns,
    with_context,
)
from router.retrieval.explained import explain
from router.retrieval.fusion import AGREED, Terms, hybrid, scored
from router.retrieval.scored import Candidate, Ranked, ScoredFunction


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


def test_requests_that_several_runs_asked_count_as_the_functions_own_text() -> None:
    # One stored request is an anecdote and counts a little below the function's own text; AGREED
    # that asked the same thing count as much as it.
    own_text = candidate("described_so", 0.78)
    fewer = Candidate("called_fewer", 0.30, example=0.78, example_runs=AGREED - 1)
    agreed = Candidate("called_agreed", 0.30, example=0.78, example_runs=AGREED)
    ranked = scores(hybrid([own_text, fewer, agreed], lexical_weight=0.25, example_weight=0.9))
    assert ranked["called_agreed"] == ranked["described_so"]
    assert ranked["called_fewer"] < ranked["described_so"]


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


RULE = {"lexical_weight": 0.25, "example_weight": 0.9, "context_weight": 0.3, "vague": 0.3}


def test_terms_add_up_to_the_score_and_name_the_signal_that_counted() -> None:
    found = [candidate("words", 0.5, lexical=8.0), candidate("usage", 0.3, lexical=2.0, example=0.8)]
    terms = {t.name: t for t in scored(found, lexical_weight=0.25, example_weight=0.9)}
    assert terms["words"].usage == 0.0
    assert terms["usage"].dense == 0.0
    for t, c in zip((terms["words"], terms["usage"]), found, strict=True):
        assert t.score == pytest.approx(dict(scores(hybrid(found, lexical_weight=0.25, example_weight=0.9)))[c.name])


def test_a_vague_turn_follows_its_context() -> None:
    new = [candidate("cancel_booking", 0.10, lexical=4.7), candidate("book_flight", 0.21, lexical=2.2)]
    new += [candidate(f"f{i}", 0.05, lexical=0.1) for i in range(4)]
    recent = [candidate("book_flight", 0.46), candidate("cancel_booking", 0.40), candidate("search_flights", 0.45)]
    ranking = rank_turn(TurnQueries(new, recent=recent), **RULE)
    assert names(ranking.functions)[0] == "book_flight"
    assert ranking.context_weight == RULE["context_weight"]
    alone = rank_turn(TurnQueries(new), **RULE)
    assert names(alone.functions)[0] == "cancel_booking"
    assert alone.context_weight == 0.0


def test_an_elliptical_vague_turn_asks_what_its_context_asked() -> None:
    # "And AF 456?" after a flight status: the turn's own words draw another function.
    new = [candidate("get_seat_map", 0.16, lexical=1.0), candidate("get_flight_status", 0.08)]
    recent = [candidate("get_flight_status", 0.55, lexical=3.0), candidate("get_seat_map", 0.30)]
    nudged = rank_turn(TurnQueries(new, recent=recent), **RULE)
    assert names(nudged.functions)[0] == "get_seat_map"
    ranking = rank_turn(TurnQueries(new, recent=recent, elliptical=True), **RULE)
    assert ranking.functions == hybrid(recent, lexical_weight=0.25, example_weight=0.9)
    assert ranking.context_weight == 1.0
    assert ranking.as_context


def test_an_elliptical_turn_that_is_clear_keeps_its_own_ranking() -> None:
    new = [candidate("get_weather", 0.62, lexical=5.0), candidate("search_flights", 0.30)]
    recent = [candidate("search_flights", 0.9), candidate("get_weather", 0.2)]
    ranking = rank_turn(TurnQueries(new, recent=recent, elliptical=True), **RULE)
    assert ranking.context_weight == 0.0
    assert not ranking.as_context
    assert ranking.functions == hybrid(new, lexical_weight=0.25, example_weight=0.9)


def test_a_context_that_found_nothing_leaves_the_turn_as_it_is() -> None:
    new = [candidate("book_flight", 0.21, lexical=2.0), candidate("cancel_booking", 0.1, lexical=3.0)]
    ranking = rank_turn(TurnQueries(new, recent=[]), **RULE)
    assert ranking.context_weight == 0.0
    assert ranking.functions == rank_turn(TurnQueries(new), **RULE).functions


def test_a_clear_turn_ignores_its_context() -> None:
    new = [candidate("send_email", 0.62, lexical=5.0), candidate("book_flight", 0.30)]
    recent = [candidate("book_flight", 0.9), candidate("send_email", 0.2)]
    ranking = rank_turn(TurnQueries(new, recent=recent), **RULE)
    assert ranking.context_weight == 0.0
    assert ranking.functions == hybrid(new, lexical_weight=0.25, example_weight=0.9)


def test_a_close_usage_example_makes_a_turn_clear() -> None:
    new = [candidate("vague_text", 0.1, example=0.9), candidate("other", 0.05)]
    ranking = rank_turn(TurnQueries(new, recent=[candidate("other", 0.8)]), **RULE)
    assert ranking.context_weight == 0.0


def test_context_terms_and_the_stand_in_for_a_missing_function_add_up() -> None:
    new = [Terms("a", 0.4, 0.0, 0.1), Terms("b", 0.3, 0.0, 0.0)]
    recent = [Terms("c", 0.9, 0.0, 0.0), Terms("a", 0.2, 0.0, 0.0)]
    fused = {f.terms.name: f for f in with_context(new, recent, weight=0.5)}
    assert fused["a"].score == pytest.approx((0.5 + 0.5 * 0.2) / 1.5)
    assert fused["b"].score == pytest.approx((0.3 + 0.5 * 0.2) / 1.5)  # the recent query's floor
    assert fused["c"].score == pytest.approx((0.3 + 0.5 * 0.9) / 1.5)  # the new turn's floor
    assert fused["c"].unseen == pytest.approx(0.3 / 1.5)
    assert fused["a"].alone == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("new", "label"),
    [
        ([candidate("book_flight", 0.21, lexical=2.0), candidate("cancel_booking", 0.1, lexical=3.0)], "vague"),
        ([candidate("book_flight", -0.1), candidate("cancel_booking", -0.2)], "matches nothing"),
        ([], "no candidates"),
    ],
)
@pytest.mark.parametrize("elliptical", [False, True])
def test_under_context_the_explained_terms_add_up_to_each_score(
    new: list[Candidate], label: str, elliptical: bool
) -> None:
    recent = [candidate("search_flights", 0.5, lexical=4.0), candidate("book_flight", 0.4, lexical=1.0)]
    queries = TurnQueries(new, recent=recent, elliptical=elliptical)
    ranking = rank_turn(queries, **RULE)
    assert ranking.context_weight > 0, label
    chosen = [
        ScoredFunction(parse_function({"name": r.name, "description": ""}, where="test"), r.score)
        for r in ranking.functions
    ]
    explained = explain(chosen, queries, ranking)
    assert "search_flights" in explained  # found by the context alone: its own score stands in as `unseen`
    assert all(e.context_only is elliptical for e in explained.values())
    for function in chosen:
        terms = explained[function.function.name].terms
        assert sum(terms.values()) == pytest.approx(function.score), (label, function.function.name)


def test_a_companion_is_explained_by_its_one_term() -> None:
    queries = TurnQueries([candidate("search_flights", 0.6, lexical=3.0, example=0.7)])
    ranking = rank_turn(queries, **RULE)
    function = parse_function({"name": "book_flight", "description": ""}, where="test")
    explained = explain([ScoredFunction(function, 0.4)], queries, ranking, {"book_flight": "search_flights"})
    companion = explained["book_flight"]
    assert companion.terms["companion"] == pytest.approx(0.4)
    assert sum(companion.terms.values()) == pytest.approx(0.4)
    assert (companion.weights.dense, companion.weights.lexical, companion.weights.usage) == (0.0, 0.0, 0.0)


def test_rankings_take_turns_and_one_whose_best_is_taken_waits_for_the_next_round() -> None:
    def ranking(*found: str) -> list[Found]:
        return [Found(Terms(n, 1.0 - i / 10, 0.0, 0.0)) for i, n in enumerate(found)]

    rankings = [ranking("a", "b", "c"), ranking("a", "d"), ranking("e", "b", "f")]
    assert [f.terms.name for f in take_turns(rankings)] == ["a", "e", "b", "d", "c", "f"]


def test_in_a_round_the_parts_follow_the_whole_turn_best_scored_first() -> None:
    def ranking(*found: tuple[str, float]) -> list[Found]:
        return [Found(Terms(n, s, 0.0, 0.0)) for n, s in found]

    whole = ranking(("a", 0.3), ("b", 0.2))
    preamble = ranking(("x", 0.25), ("z", 0.2))  # "I am a photographer.": finds little
    request = ranking(("y", 0.7), ("w", 0.6))
    order = [f.terms.name for f in take_turns([whole, preamble, request])]
    assert order == ["a", "y", "x", "b", "w", "z"]


def test_each_part_gets_its_tools_into_the_top_n() -> None:
    # The whole turn leans to the flight: its three best are all flights.
    whole = [candidate("book_flight", 0.6), candidate("search_flights", 0.58), candidate("flight_status", 0.55)]
    whole += [candidate("send_email", 0.3), candidate("convert_currency", 0.2)]
    flight = [candidate("book_flight", 0.7), candidate("search_flights", 0.6)]
    email = [candidate("send_email", 0.65), candidate("book_flight", 0.2)]
    money = [candidate("convert_currency", 0.7), candidate("send_email", 0.1)]
    queries = TurnQueries(whole, parts=[("book it", flight), ("email it", email), ("convert it", money)])
    ranking = rank_turn(queries, **RULE)
    assert set(names(ranking.functions)[:3]) == {"book_flight", "send_email", "convert_currency"}
    assert ranking.found["send_email"].part == "email it"
    assert ranking.found["book_flight"].part is None
    assert ranking.found["send_email"].score == pytest.approx(0.75 * 0.65 + 0.25 * 0.0)


def test_a_one_part_turn_routes_as_the_whole_turn_alone() -> None:
    whole = [candidate("a", 0.5, lexical=2.0), candidate("b", 0.45, lexical=3.0), candidate("c", 0.2)]
    ranking = rank_turn(TurnQueries(whole), **RULE)
    assert ranking.functions == hybrid(whole, lexical_weight=0.25, example_weight=0.9)


def test_a_part_near_no_function_takes_a_turn_only_when_it_asks_for_an_action() -> None:
    whole = [candidate("book_hotel", 0.5, lexical=3.0), candidate("book_flight", 0.2)]
    scene = [candidate("get_weather", 0.1), candidate("book_hotel", 0.05)]  # under the vague mark
    step = [candidate("send_email", 0.14, lexical=4.0), candidate("search_flights", 0.2)]  # as vague, but asks
    queries = TurnQueries(whole, parts=[("I love old cathedrals.", scene), ("email the plan to Dana.", step)])
    ranking = rank_turn(queries, **RULE)
    assert "get_weather" not in names(ranking.functions)
    assert names(ranking.functions)[:2] == ["book_hotel", "send_email"]
    assert ranking.found["send_email"].part == "email the plan to Dana."
    # In another language the router knows no verbs to read an action by: every part takes turns.
    other = rank_turn(TurnQueries(whole, parts=queries.parts, english=False), **RULE)
    assert other.found["get_weather"].part == "I love old cathedrals."


class _Runs:
    """Stored runs, as ``CompanionStore.runs`` gives them."""

    def __init__(self, runs: list[list[str]]) -> None:
        self.stored = runs

    def runs(self, _namespace: str, anchors: Sequence[str]) -> list[list[str]]:
        return [r for r in self.stored if set(r) & set(anchors)]


def test_a_companion_already_in_place_takes_no_companion_slot() -> None:
    # book_hotel is a companion of search_hotels but already ranked right after it; pay_invoice, book_hotel's
    # companion, is the one that moves, and three functions leave room for one companion.
    runs = _Runs([["search_hotels", "book_hotel", "pay_invoice"]] * 2)
    ranking = [Ranked("search_hotels", 0.8), Ranked("book_hotel", 0.7), Ranked("get_weather", 0.5)]
    ranked, companion_of = with_companions(runs, "ns", ranking, 3)  # type: ignore[arg-type]
    assert [r.name for r in ranked] == ["search_hotels", "book_hotel", "pay_invoice", "get_weather"]
    assert companion_of == {"pay_invoice": "book_hotel"}
