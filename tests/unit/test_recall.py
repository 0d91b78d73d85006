"""Recall's ranking and cut-off on hand-made vectors; facets of a function."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from router.catalog.functions import parse_function
from router.retrieval.texts import parameter_facets
from router.sessions.recall import RecallSettings, rank
from router.sessions.records import MemoryRows


def axis(*weights: float) -> np.ndarray:
    vector = np.zeros(8, dtype=np.float32)
    vector[: len(weights)] = weights
    return vector / np.linalg.norm(vector)


def rows(*vectors: np.ndarray) -> MemoryRows:
    return MemoryRows([f"m{i}" for i in range(len(vectors))], np.stack(vectors))


def texts(memories: Sequence[object]) -> list[str]:
    return [m.text for m in memories]  # type: ignore[attr-defined]


def test_memories_are_cut_relative_to_the_one_that_stands_out_most() -> None:
    memories = rows(axis(1, 0.1), axis(1, 0.15), axis(0.3, 1), axis(0, 0, 1))
    found = rank(memories, axis(1), settings=RecallSettings(standout=0.65, min_score=0.0, budget=0))
    assert texts(found) == ["m0", "m1"]
    assert found[0].score > found[1].score
    assert texts(rank(memories, axis(1), settings=RecallSettings(standout=1.0, min_score=0.0, budget=0))) == ["m0"]
    limited = RecallSettings(limit=1, standout=0.0, min_score=0, budget=0)
    assert texts(rank(memories, axis(1), settings=limited)) == ["m0"]


def test_a_memory_the_functions_single_out_comes_before_one_the_turn_grazes() -> None:
    # "I am vegetarian" shares nothing with "a restaurant near the Louvre" but fits the routed
    # function's dietary parameter far better than any other memory does; "I grew up in a
    # village" is a little closer to the turn, as every memory about places is.
    vegetarian, village = axis(-0.05, 1), axis(0.3, 0, 1)
    places = [axis(0.25, 0, 0, 1), axis(0.2, 0, 0, 0, 1), axis(0.25, 0, 0, 0, 0, 1), axis(0.2, 0, 0, 0, 0, 0, 1)]
    dietary = np.stack([axis(0.2, 0, 0.2, 0.2, 0.2, 0.2, 0.2), axis(0, 1, 0.4)])
    settings = RecallSettings(min_score=0.0, budget=0)
    found = rank(rows(vegetarian, village, *places), axis(1), functions=[(0.6, dietary)], settings=settings)
    assert texts(found)[0] == "m0"


def test_a_user_with_few_memories_gets_each_one_above_the_floor() -> None:
    memories = rows(axis(1, 0.1), axis(0.3, 1), axis(0.2, 1), axis(0.1, 1), axis(0, 0, 1))
    few = RecallSettings(limit=2, standout=0.65, min_score=0.05, budget=5, budget_chars=100)
    assert texts(rank(memories, axis(1), settings=few)) == ["m0", "m1", "m2", "m3"]
    # Past the budget, by count or by characters, the standout share and the limit cut again.
    for past in (
        RecallSettings(limit=2, standout=0.65, min_score=0.05, budget=4, budget_chars=100),
        RecallSettings(limit=2, standout=0.65, min_score=0.05, budget=5, budget_chars=9),
    ):
        assert texts(rank(memories, axis(1), settings=past)) == ["m0"]


def test_nothing_comes_back_under_the_floor() -> None:
    memories = rows(axis(0, 0, 1), axis(0, 0, 0, 1))
    assert rank(memories, axis(1), settings=RecallSettings(min_score=0.1)) == []
    assert rank(rows(axis(1)), axis(1), settings=RecallSettings(limit=0)) == []


def test_a_routed_functions_facet_brings_back_a_memory_the_turn_does_not_share_words_with() -> None:
    vegetarian, seat = axis(0, 1), axis(0, 0, 1)
    turn = axis(1)  # "a restaurant near the Louvre": close to neither memory
    dietary = np.stack([axis(1, 0.2), axis(0.1, 1)])  # the function's purpose, its dietary parameter
    settings = RecallSettings(min_score=0.1)
    assert rank(rows(vegetarian, seat), turn, settings=settings) == []
    found = rank(rows(vegetarian, seat), turn, functions=[(0.6, dietary)], settings=settings)
    assert texts(found) == ["m0"]
    # A function routed far below the first one counts that much less.
    weak = rank(
        rows(vegetarian, seat), turn, functions=[(0.6, np.stack([axis(1)])), (0.06, dietary)], settings=settings
    )
    assert weak == []


def test_the_recent_context_counts_with_its_weight() -> None:
    memories = rows(axis(0, 1), axis(0, 0, 1))
    settings = RecallSettings(min_score=0.1, context_weight=0.8)
    found = rank(memories, axis(1), recent=axis(0, 1), settings=settings)
    assert texts(found) == ["m0"]
    assert found[0].score == pytest.approx(0.8)


def test_a_parameters_facet_is_its_words_description_and_choices() -> None:
    function = parse_function(
        {
            "name": "bookFlight",
            "description": "Book a flight.",
            "parameters": {
                "type": "object",
                "properties": {
                    "seat": {"type": "string", "enum": ["aisle", "window"], "description": "seat preference"},
                    "meal_request": {"type": "string"},
                },
            },
        },
        where="f",
    )
    assert parameter_facets(function) == ["seat: seat preference; aisle, window", "meal request"]


@pytest.mark.parametrize("items", [{"enum": ["red", "blue"]}, [{"type": "string"}], True, "string"])
def test_a_facet_reads_the_choices_of_any_items_json_schema_allows(items: Any) -> None:
    colour = {"type": "array", "items": items, "description": "colours"}
    function = parse_function(
        {"name": "paint", "parameters": {"type": "object", "properties": {"colours": colour}}}, where="f"
    )
    choices = "; red, blue" if isinstance(items, dict) else ""
    assert parameter_facets(function) == [f"colours: colours{choices}"]
