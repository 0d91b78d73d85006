"""Recall's ranking and cut-off on hand-made vectors; facets of a function; the facet cache."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from router.catalog import parse_function
from router.embedding import Vectors
from router.sessions.memory import MemoryRows
from router.sessions.recall import FacetCache, RecallSettings, facet_texts, rank, recall


def axis(*weights: float) -> np.ndarray:
    vector = np.zeros(8, dtype=np.float32)
    vector[: len(weights)] = weights
    return vector / np.linalg.norm(vector)


def rows(*vectors: np.ndarray) -> MemoryRows:
    return MemoryRows([f"m{i}" for i in range(len(vectors))], np.stack(vectors))


def texts(memories: Sequence[object]) -> list[str]:
    return [m.text for m in memories]  # type: ignore[attr-defined]


def test_memories_are_cut_relative_to_the_best_one() -> None:
    memories = rows(axis(1, 0.1), axis(1, 0.15), axis(0.3, 1), axis(0, 0, 1))
    found = rank(memories, axis(1), settings=RecallSettings(margin=0.05, min_score=0.0))
    assert texts(found) == ["m0", "m1"]
    assert found[0].score > found[1].score
    wider = rank(memories, axis(1), settings=RecallSettings(margin=0.8, min_score=0.0))
    assert texts(wider) == ["m0", "m1", "m2"]
    assert texts(rank(memories, axis(1), settings=RecallSettings(limit=1, margin=1, min_score=0))) == ["m0"]


def test_nothing_comes_back_under_the_floor() -> None:
    memories = rows(axis(0, 0, 1), axis(0, 0, 0, 1))
    assert rank(memories, axis(1), settings=RecallSettings(min_score=0.1)) == []
    assert rank(rows(axis(1)), axis(1), settings=RecallSettings(limit=0)) == []


def test_a_routed_functions_facet_brings_back_a_memory_the_turn_does_not_share_words_with() -> None:
    vegetarian, seat = axis(0, 1), axis(0, 0, 1)
    turn = axis(1)  # "a restaurant near the Louvre": close to neither memory
    dietary = np.stack([axis(1, 0.2), axis(0.1, 1)])  # the function's purpose, its dietary parameter
    settings = RecallSettings(margin=0.05, min_score=0.1)
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
    settings = RecallSettings(margin=0.05, min_score=0.1, context_weight=0.8)
    found = rank(memories, axis(1), recent=axis(0, 1), settings=settings)
    assert texts(found) == ["m0"]
    assert found[0].score == pytest.approx(0.8)


def test_facets_are_the_purpose_then_each_parameter_with_its_description_and_choices() -> None:
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
    assert facet_texts(function) == [
        "book flight: Book a flight.",
        "seat: seat preference; aisle, window",
        "meal request",
    ]


class Counting:
    model_name = "fake"

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    async def embed(self, texts: Sequence[str], *, kind: str = "catalog") -> Vectors:
        self.calls.append((kind, list(texts)))
        return np.stack([axis(1 + len(t) % 3, 1) for t in texts])


async def test_facets_are_embedded_once_and_ranked_with_the_turn() -> None:
    cache, encoder = FacetCache(capacity=100), Counting()
    function = parse_function({"name": "get_weather", "description": "Weather for a city."}, where="f")
    memories = rows(axis(1, 1), axis(0, 0, 1))
    turn = np.stack([axis(0, 1)])
    first = await recall(memories, turn, [(function, 0.5)], encoder=encoder, cache=cache)
    again = await recall(memories, turn, [(function, 0.5)], encoder=encoder, cache=cache)
    assert texts(first) == texts(again) == ["m0"]
    assert encoder.calls == [("catalog", ["get weather: Weather for a city."])]
    empty = MemoryRows([], np.zeros((0, 8), dtype=np.float32))
    assert await recall(empty, turn, [(function, 0.5)], encoder=encoder, cache=cache) == []


def test_the_cache_drops_the_least_recently_used() -> None:
    cache = FacetCache(capacity=2)
    cache.put("m", ["a", "b"], np.stack([axis(1), axis(0, 1)]))
    assert cache.get("m", ["a"])[0] is not None
    cache.put("m", ["c"], np.stack([axis(0, 0, 1)]))
    assert [v is not None for v in cache.get("m", ["a", "b", "c"])] == [True, False, True]
    assert cache.get("other", ["a"]) == [None]
