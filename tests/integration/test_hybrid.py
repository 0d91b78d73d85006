"""Hybrid retrieval with the real model on both storage adapters: dense and sparse vectors, fused.

A request's words weigh their IDF in its own catalog, never in another's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from router.catalog.functions import FunctionDef, parse_catalog
from router.catalog.records import Generation
from router.embedding import DEFAULT_MODEL, EmbedderPool
from router.retrieval.candidates import candidates
from router.retrieval.index import FunctionStore
from router.retrieval.sparse import query_vector
from router.retrieval.texts import DEFAULT_TEMPLATE
from router.routing.routed import Turn
from router.routing.settings import RouteSettings
from router.routing.turns import TurnRouter
from router.storage.base import PointData, Storage
from router.storage.client import ClientStorage
from router.storage.edge import EdgeStorage
from sync.service import CatalogService
from tests.conftest import STOCKS, TIMEZONE, WEATHER

pytestmark = pytest.mark.integration


def schema(**properties: str) -> dict[str, Any]:
    return {"type": "object", "properties": {p: {"type": "string", "description": d} for p, d in properties.items()}}


# Pairs from BFCL where the embedding alone prefers the wrong function and the request's words
# (a table of records, a year and a title) point to the right one.
CATALOG = [
    {
        "name": "db_fetch_records",
        "description": "Fetch records from a specified database table based on certain conditions.",
        "parameters": schema(
            database_name="The name of the database.",
            table_name="The name of the table from which records need to be fetched.",
            conditions="The conditions based on which records are to be fetched.",
        ),
    },
    {
        "name": "get_adriel_education",
        "description": "Retrieve the educational background information for an individual named Adriel, including "
        "the institutions attended, degrees earned, and years of attendance.",
        "parameters": schema(person_id="The unique identifier for the person whose educational background is wanted."),
    },
    {
        "name": "historic_leader_search",
        "description": "Retrieve information about a historical leader given a location and date.",
        "parameters": schema(
            location="The country or region in question.",
            date="The year being queried.",
            title="The official title of the position. Default is 'King'.",
        ),
    },
    {
        "name": "european_history.get_monarchs",
        "description": "Provides a list of monarchs based on the specified country and century.",
        "parameters": schema(country="Country name.", century="Century as an integer."),
    },
    WEATHER,
    STOCKS,
    TIMEZONE,
]
FLIPS = [
    (
        "Fetch all records for students studying Science in 'Bluebird High School' from the StudentDB.",
        "db_fetch_records",
        "get_adriel_education",
    ),
    (
        "Who was the King of France in 1510?",
        "historic_leader_search",
        "european_history.get_monarchs",
    ),
]


def functions() -> list[FunctionDef]:
    return parse_catalog(CATALOG, source="test")


@pytest.fixture(params=["edge", "memory"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    opened: Storage = EdgeStorage(tmp_path / "data") if request.param == "edge" else ClientStorage.in_memory()
    yield opened
    opened.close()


@pytest.fixture
async def service(storage: Storage, embedders: EmbedderPool) -> CatalogService:
    # Each test's store is its own, written by this service alone (as embedded storage is).
    opened = CatalogService(storage, embedders, model=DEFAULT_MODEL, text=DEFAULT_TEMPLATE, sole_writer=True)
    await opened.open()
    await opened.apply("bench", functions(), source="test")
    return opened


async def ranked(router: TurnRouter, text: str) -> list[tuple[str, float]]:
    routed = await router.route(Turn("bench", [{"role": "user", "content": text}], max_functions=len(CATALOG)))
    return [(f.function.name, f.score) for f in routed.functions]


@pytest.mark.parametrize(("request_text", "right", "closer_in_meaning"), FLIPS)
async def test_words_rank_the_right_function_first_where_meaning_alone_does_not(
    service: CatalogService, storage: Storage, request_text: str, right: str, closer_in_meaning: str
) -> None:
    dense_only = TurnRouter(service.catalogs, RouteSettings(lexical_weight=0.0))
    hybrid = TurnRouter(service.catalogs, RouteSettings())

    assert (await ranked(dense_only, request_text))[0][0] == closer_in_meaning
    found = await ranked(hybrid, request_text)
    assert found[0][0] == right
    scores = [score for _, score in found]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0 <= score <= 1.0 for score in scores)


async def test_every_candidate_gets_exact_cosine_and_bm25(service: CatalogService) -> None:
    index = service.index
    text = "Who was the King of France in 1510?"
    vector = (await index.embedder.query([text]))[0].tolist()

    sparse = query_vector(text, index.store.frequencies("bench"))
    # One per signal: the best by meaning and the best by words are both candidates, each scored on both.
    found = {c.name: c for c in candidates(index.store, "bench", vector, sparse, limit=1)}
    everything = {c.name: c for c in candidates(index.store, "bench", vector, sparse, limit=50)}

    assert set(found) == {"historic_leader_search", "european_history.get_monarchs"}
    for name, candidate in found.items():
        assert candidate.cosine == pytest.approx(everything[name].cosine, abs=1e-5)
        assert candidate.lexical == pytest.approx(everything[name].lexical, rel=1e-5)
    assert everything["get_weather"].lexical == 0.0


async def test_both_adapters_score_words_alike(embedders: EmbedderPool, tmp_path: Path) -> None:
    text = "Fetch the records of the students table"
    lexical: list[dict[str, float]] = []
    for storage in (EdgeStorage(tmp_path / "edge"), ClientStorage.in_memory()):
        try:
            opened = CatalogService(storage, embedders, model=DEFAULT_MODEL, text=DEFAULT_TEMPLATE)
            await opened.open()
            await opened.apply("bench", functions(), source="test")
            vector = (await opened.index.embedder.query([text]))[0].tolist()
            sparse = query_vector(text, opened.index.store.frequencies("bench"))
            found = candidates(opened.index.store, "bench", vector, sparse, limit=50)
            lexical.append({c.name: c.lexical for c in found})
        finally:
            storage.close()

    edge, client = lexical
    assert edge.keys() == client.keys()
    assert edge == pytest.approx(client, rel=1e-5)
    assert max(edge, key=lambda name: edge[name]) == "db_fetch_records"


async def test_a_route_reads_the_definitions_of_the_functions_it_returns_only(
    service: CatalogService, storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = service.index.store
    read: list[int] = []
    fetch = store.collection.retrieve

    def counted(ids: Any, **kwargs: Any) -> Any:
        read.append(len(ids))
        return fetch(ids, **kwargs)

    monkeypatch.setattr(store.collection, "retrieve", counted)
    router = TurnRouter(service.catalogs, RouteSettings())

    routed = await router.route(
        Turn("bench", [{"role": "user", "content": "Weather in Paris today?"}], max_functions=2)
    )

    assert routed.functions[0].function.name == WEATHER["name"]
    assert len(routed.functions) == 2
    assert sum(read) == 2  # of the 7 candidates, the 2 returned


async def test_a_function_gone_between_its_search_and_its_definition_is_passed_over(
    service: CatalogService, storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = service.index.store
    router = TurnRouter(service.catalogs, RouteSettings())
    turn = Turn("bench", [{"role": "user", "content": "Weather in Paris today?"}], max_functions=2)
    before = [
        f.function.name for f in (await router.route(Turn(turn.namespace, turn.messages, max_functions=3))).functions
    ]
    definitions = store.definitions

    def without_the_best(namespace: str, names: Any) -> Any:
        return {n: f for n, f in definitions(namespace, names).items() if n != before[0]}

    monkeypatch.setattr(store, "definitions", without_the_best)

    routed = await router.route(turn)

    assert [f.function.name for f in routed.functions] == before[1:3]


WORDS = "Fetch the records of the students table"


def crowd(count: int) -> list[dict[str, Any]]:
    """Functions full of the request's words: in a shared IDF they would make those words common."""
    return [
        {
            "name": f"student_records_{i}",
            "description": "Fetch the records of students from a table.",
            "parameters": schema(table="The table of student records."),
        }
        for i in range(count)
    ]


async def words(service: CatalogService, namespace: str) -> dict[str, float]:
    """Each routed function's raw BM25 score for ``WORDS``, as the route explains it."""
    router = TurnRouter(service.catalogs, RouteSettings())
    turn = Turn(namespace, [{"role": "user", "content": WORDS}], max_functions=10, explain=True)
    routed = await router.route(turn)
    return {name: e.lexical_raw for name, e in routed.explanations.items()}


async def test_another_catalog_never_moves_a_catalogs_word_scores(service: CatalogService) -> None:
    before = await words(service, "bench")

    await service.apply("crowd", parse_catalog(crowd(40), source="test"), source="test")

    assert before["db_fetch_records"] > 0
    assert await words(service, "bench") == pytest.approx(before, rel=1e-6)


async def test_a_catalogs_own_change_moves_its_word_scores(service: CatalogService) -> None:
    before = await words(service, "bench")

    # The request's words become common in the catalog itself: each weighs less.
    await service.apply("bench", [*functions(), *parse_catalog(crowd(3), source="test")], source="test")

    after = await words(service, "bench")
    assert after["db_fetch_records"] < before["db_fetch_records"]


async def test_the_words_score_as_the_engines_bm25_over_the_catalog_alone(
    service: CatalogService, storage: Storage
) -> None:
    text = f"{WORDS}, the weather in Paris and the stock price of Apple"  # words of several functions
    index = service.index
    vector = (await index.embedder.query([text]))[0].tolist()
    ours = candidates(index.store, "bench", vector, query_vector(text, index.store.frequencies("bench")), limit=50)

    # A store of the previous version, where the engine weighs terms by their IDF over its
    # collection: holding this catalog alone, it must score the words the same.
    current = index.store.generation
    earlier = Generation(current.model, current.text, current.dimension, version=3)
    legacy = FunctionStore.open(storage, earlier)
    listed = functions()
    dimension = current.dimension
    dense = np.eye(len(listed), dimension, dtype=np.float32)
    legacy.upsert("bench", listed, dense, [np.zeros((1, dimension), dtype=np.float32) for _ in listed])
    assert legacy.frequencies("bench") is None
    engine = candidates(legacy, "bench", vector, query_vector(text), limit=50)

    scored = {c.name: c.lexical for c in ours if c.lexical > 0}
    assert len(scored) >= 3
    assert {c.name: c.lexical for c in engine if c.lexical > 0} == pytest.approx(scored, rel=1e-4)


async def test_a_function_stored_without_its_terms_is_counted_from_its_definition(
    service: CatalogService, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = service.index.store
    upsert = store.collection.upsert

    def as_before(points: list[PointData]) -> None:  # as a replica of the previous version writes them
        upsert([replace(p, payload={k: v for k, v in p.payload.items() if k != "terms"}) for p in points])

    monkeypatch.setattr(store.collection, "upsert", as_before)
    await service.apply("bare", functions(), source="test")
    monkeypatch.undo()

    bare, full = store.frequencies("bare"), store.frequencies("bench")
    assert bare is not None
    assert full is not None
    assert bare.functions == full.functions == len(CATALOG)
    assert bare.terms.tolist() == full.terms.tolist()
    assert bare.counts.tolist() == full.counts.tolist()
