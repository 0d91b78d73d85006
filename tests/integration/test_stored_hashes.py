"""The writer keeps each namespace's stored hashes between applies, and never misses another writer's change."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import STOCKS, TIMEZONE, WEATHER, writes_cut_short

from router import catalog as catalog_module
from router.catalog import FunctionDef, parse_catalog
from router.embedding import DEFAULT_MODEL, EmbedderPool
from router.meta import MetaStore
from router.retrieval.texts import DEFAULT_TEMPLATE
from router.storage.base import Storage
from router.storage.client import ClientStorage
from router.storage.edge import EdgeStorage
from sync.service import CatalogService

pytestmark = pytest.mark.integration


@pytest.fixture(params=["edge", "memory"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    opened: Storage = EdgeStorage(tmp_path / "data") if request.param == "edge" else ClientStorage.in_memory()
    yield opened
    opened.close()


async def open_service(storage: Storage, pool: EmbedderPool) -> CatalogService:
    opened = CatalogService(storage, pool, model=DEFAULT_MODEL, text=DEFAULT_TEMPLATE)
    await opened.open()
    return opened


def parse(*definitions: dict[str, Any]) -> list[FunctionDef]:
    return parse_catalog([copy.deepcopy(d) for d in definitions], source="test")


class Reads:
    """Counts the reads of stored hashes of one service's store."""

    def __init__(self, service: CatalogService) -> None:
        self.count = 0
        store = service.index.store
        original = store.hashes

        def counted(namespace: str) -> dict[str, str]:
            self.count += 1
            return original(namespace)

        store.hashes = counted  # type: ignore[method-assign]


def names(service: CatalogService, namespace: str) -> set[str]:
    return {f.name for f in service.index.store.list(namespace)}


async def test_the_next_apply_reads_no_stored_hashes(storage: Storage, counting_pool: EmbedderPool) -> None:
    service = await open_service(storage, counting_pool)
    await service.apply("tools", parse(WEATHER, STOCKS), source="api")
    reads = Reads(service)
    edited = {**STOCKS, "description": "Latest stock quote for a ticker symbol, with the day's change"}

    changed = await service.apply("tools", parse(WEATHER, edited), source="api")
    unchanged = await service.apply("tools", parse(WEATHER, edited), source="api")

    assert changed.counts() == {"added": 0, "updated": 1, "removed": 0, "unchanged": 1}
    assert unchanged.counts() == {"added": 0, "updated": 0, "removed": 0, "unchanged": 2}
    assert reads.count == 0
    [stock] = [f for f in service.index.store.list("tools") if f.name == STOCKS["name"]]
    assert stock.description == edited["description"]


async def test_another_writer_is_never_missed(storage: Storage, counting_pool: EmbedderPool) -> None:
    # Two writers on one storage: API replicas on one Qdrant server.
    first = await open_service(storage, counting_pool)
    second = await open_service(storage, counting_pool)
    await first.apply("tools", parse(WEATHER, STOCKS), source="api")
    await second.apply("tools", parse(WEATHER, TIMEZONE), source="api")
    reads = Reads(first)

    again = await first.apply("tools", parse(WEATHER, STOCKS), source="api")

    assert again.counts() == {"added": 1, "updated": 0, "removed": 1, "unchanged": 1}
    assert reads.count == 1
    assert names(first, "tools") == {WEATHER["name"], STOCKS["name"]}


async def test_a_failed_apply_leaves_the_store_to_be_read_again(storage: Storage, counting_pool: EmbedderPool) -> None:
    service = await open_service(storage, counting_pool)
    await service.apply("tools", parse(WEATHER), source="api")
    with writes_cut_short(service.index.store), pytest.raises(OSError, match="disk full"):
        await service.apply("tools", parse(WEATHER, STOCKS), source="api")
    reads = Reads(service)

    after = await service.apply("tools", parse(WEATHER, STOCKS), source="api")

    assert reads.count == 1
    assert after.counts() == {"added": 0, "updated": 0, "removed": 0, "unchanged": 2}
    assert names(service, "tools") == {WEATHER["name"], STOCKS["name"]}


async def test_a_removed_namespace_is_read_again_when_it_comes_back(
    storage: Storage, counting_pool: EmbedderPool
) -> None:
    service = await open_service(storage, counting_pool)
    await service.apply("tools", parse(WEATHER, STOCKS), source="api")
    await service.remove("tools")

    back = await service.apply("tools", parse(WEATHER), source="api")

    assert back.counts() == {"added": 1, "updated": 0, "removed": 0, "unchanged": 0}
    assert names(service, "tools") == {WEATHER["name"]}


async def test_unchanged_definitions_are_not_hashed_again(
    storage: Storage, counting_pool: EmbedderPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = await open_service(storage, counting_pool)
    await service.apply("tools", parse(WEATHER, STOCKS, TIMEZONE), source="api")
    hashed: list[Any] = []
    original = catalog_module.canonical_json

    def counted(value: Any) -> bytes:
        hashed.append(value)
        return original(value)

    monkeypatch.setattr(catalog_module, "canonical_json", counted)
    edited = {**STOCKS, "description": "Latest stock quote for a ticker symbol, with the day's change"}
    reordered = dict(reversed(list(TIMEZONE.items())))
    functions = parse(WEATHER, edited, reordered)

    summary = await service.apply("tools", functions, source="api")

    assert summary.counts() == {"added": 0, "updated": 1, "removed": 0, "unchanged": 2}
    # The edited one and the reordered one (same content, other bytes) are hashed; the untouched one is not.
    assert [v["name"] for v in hashed] == [STOCKS["name"], TIMEZONE["name"]]
    [weather] = [f for f in functions if f.name == WEATHER["name"]]
    assert weather.content_hash == parse(WEATHER)[0].content_hash


def test_a_catalog_record_reads_back_equal_to_the_one_written(storage: Storage) -> None:
    # Qdrant's JSON numbers come back a bit off about one time in eight: a record must not depend on them.
    meta = MetaStore.open(storage)
    written = [meta.put_catalog(f"ns{i}", source="api", count=i, pinned=("a",), digest="d") for i in range(200)]

    assert [meta.catalog(f"ns{i}") for i in range(200)] == written
    assert list(meta.catalogs().values()) == sorted(written, key=lambda r: r.namespace)
    assert len({r.write for r in written}) == 200


async def test_a_new_document_digest_is_recorded_by_every_apply(storage: Storage, counting_pool: EmbedderPool) -> None:
    service = await open_service(storage, counting_pool)
    functions = parse(WEATHER, STOCKS)
    reads = Reads(service)

    for i in range(40):
        await service.apply("tools", functions, source="dir:/catalogs", digest=f"digest-{i}")
        record = service.meta.catalog("tools")
        assert record is not None
        assert record.digest == f"digest-{i}"
    assert reads.count == 1  # the first apply; each later one knows the store it left
