"""The word counts behind each catalog's IDF, kept per process: moved by their sole writer,
counted afresh otherwise, and dropped with their catalog.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from router.catalog.functions import parse_catalog
from router.common.errors import NamespaceNotFound
from router.embedding import DEFAULT_MODEL, EmbedderPool
from router.retrieval.texts import DEFAULT_TEMPLATE
from router.routing.routed import Turn
from router.routing.settings import RouteSettings
from router.routing.turns import TurnRouter
from router.storage.base import PointData, Storage
from sync.service import CatalogService
from tests.integration import test_hybrid
from tests.integration.test_hybrid import CATALOG, WORDS, crowd, functions, words

pytestmark = pytest.mark.integration

# The hybrid tests' fixtures: both adapters, each store written by the service alone.
storage, service = test_hybrid.storage, test_hybrid.service


async def test_a_change_is_counted_by_its_writer_so_the_next_route_need_not(
    service: CatalogService, monkeypatch: pytest.MonkeyPatch
) -> None:
    await service.apply("bench", [*functions(), *parse_catalog(crowd(3), source="test")], source="test")
    await service.settle()
    store = service.index.store

    monkeypatch.setattr(store, "_count", refuse_to_count)
    assert (await words(service, "bench"))["db_fetch_records"] > 0


async def test_a_writer_moves_the_word_counts_it_kept_by_what_it_wrote(
    service: CatalogService, monkeypatch: pytest.MonkeyPatch
) -> None:
    await service.settle()
    before = await words(service, "bench")
    store = service.index.store
    counts = store._count

    monkeypatch.setattr(store, "_count", refuse_to_count)
    # One function removed, one reworded, three added: the counts move by each, read nowhere else.
    listed = functions()
    reworded = parse_catalog([{**CATALOG[1], "description": "Records fetched from the database."}], source="test")
    changed = [listed[0], *reworded, *listed[3:], *parse_catalog(crowd(3), source="test")]
    await service.apply("bench", changed, source="test")
    after = await words(service, "bench")
    monkeypatch.undo()

    assert after["db_fetch_records"] < before["db_fetch_records"]
    moved, afresh = store.frequencies("bench"), counts("bench")
    assert moved is not None
    assert moved.functions == afresh.functions == len(CATALOG) - 1 + 3
    assert moved.terms.tolist() == afresh.terms.tolist()
    assert moved.counts.tolist() == afresh.counts.tolist()


async def test_counts_of_a_version_another_process_wrote_over_are_not_moved(service: CatalogService) -> None:
    store = service.index.store
    assert store.frequencies("bench", 1.0) is not None
    store.upsert("bench", functions()[:1], *vectors(service, 1))

    # Counted at version 1.0, while the record read before the write said 2.0: another process wrote between.
    assert not store.counted("bench", 3.0, since=2.0)
    assert not store.counted("bench", 3.0, since=1.0)  # dropped: the next route counts afresh


async def test_a_write_that_failed_but_may_have_landed_leaves_no_counts_to_move(
    service: CatalogService, monkeypatch: pytest.MonkeyPatch
) -> None:
    await service.settle()
    await words(service, "bench")  # counted and kept
    store = service.index.store
    upsert = store.collection.upsert

    def landed_then_timed_out(points: list[PointData]) -> None:
        upsert(points)
        raise TimeoutError("no answer from the store")

    monkeypatch.setattr(store.collection, "upsert", landed_then_timed_out)
    reworded = parse_catalog([{**CATALOG[1], "description": "Records fetched from the database."}], source="test")
    changed = [functions()[0], *reworded, *functions()[2:]]
    with pytest.raises(TimeoutError):
        await service.apply("bench", changed, source="test")
    monkeypatch.undo()
    await service.apply("bench", changed, source="test")  # the retry finds the function written already
    await service.settle()

    kept, afresh = store.frequencies("bench"), store._count("bench")
    assert kept is not None
    assert kept.terms.tolist() == afresh.terms.tolist()
    assert kept.counts.tolist() == afresh.counts.tolist()


async def test_a_writer_that_may_not_be_alone_counts_afresh(
    storage: Storage, embedders: EmbedderPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = CatalogService(storage, embedders, model=DEFAULT_MODEL, text=DEFAULT_TEMPLATE)  # server mode
    await shared.open()
    await shared.apply("bench", functions(), source="test")
    await shared.settle()
    store = shared.index.store
    assert store.frequencies("bench") is not None  # counted and kept
    retrieve, read = store.collection.retrieve, []

    def reading(ids: Any, **kwargs: Any) -> Any:
        read.append(kwargs.get("fields"))
        return retrieve(ids, **kwargs)

    monkeypatch.setattr(store.collection, "retrieve", reading)
    await shared.apply("bench", [*functions(), *parse_catalog(crowd(3), source="test")], source="test")
    await shared.settle()
    monkeypatch.undo()

    assert ("terms",) not in read  # the old terms of what it wrote are not read: nothing is moved
    kept, afresh = store.frequencies("bench"), store._count("bench")
    assert kept is not None
    assert kept.functions == afresh.functions == len(CATALOG) + 3
    assert kept.terms.tolist() == afresh.terms.tolist()


async def test_a_catalog_another_process_deleted_leaves_no_counts_behind(
    service: CatalogService, monkeypatch: pytest.MonkeyPatch
) -> None:
    await service.settle()
    store = service.index.store
    monkeypatch.setattr(store, "_count", refuse_to_count)
    assert store.frequencies("bench") is not None  # kept: nothing is counted

    service.meta.delete_catalog("bench")  # as another process deletes it
    store.collection.delete_where({"namespace": "bench"})
    with pytest.raises(NamespaceNotFound):
        await TurnRouter(service.catalogs, RouteSettings()).route(Turn("bench", [{"role": "user", "content": WORDS}]))

    with pytest.raises(AssertionError, match="counted again"):
        store.frequencies("bench")


async def test_a_route_that_found_no_catalog_keeps_the_counts_a_write_made_meanwhile(
    service: CatalogService, monkeypatch: pytest.MonkeyPatch
) -> None:
    await service.settle()
    store = service.index.store
    assert store.frequencies("bench") is not None  # kept

    def written_meanwhile(namespace: str) -> Any:
        # The route reads no record (the catalog was being made anew), and the writer writes before its verdict.
        store.upsert(namespace, functions()[:1], *vectors(service, 1))
        return None

    monkeypatch.setattr(service.meta, "catalog", written_meanwhile)
    with pytest.raises(NamespaceNotFound):
        service.catalogs.known("bench")
    monkeypatch.undo()

    assert "bench" in store._moved  # the counts the write moved, for its record to name


async def test_a_deleted_catalog_leaves_no_counts_behind(service: CatalogService) -> None:
    await service.settle()
    store = service.index.store
    assert store.frequencies("bench") is not None

    await service.remove("bench")
    await service.settle()

    # Nothing of it stays in memory, neither counts nor counts moved by the removal.
    assert "bench" not in store._frequencies
    assert "bench" not in store._moved


def refuse_to_count(namespace: str) -> Any:
    raise AssertionError(f"the words of {namespace!r} were counted again")


def vectors(service: CatalogService, n: int) -> tuple[Any, list[Any]]:
    dimension = service.index.store.generation.dimension
    return np.zeros((n, dimension), dtype=np.float32), [np.zeros((1, dimension), dtype=np.float32)] * n
