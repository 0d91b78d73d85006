"""Reconciling catalogs into a real store with the real model, on both storage adapters.

The counting embedder proves that only new or changed functions are embedded; the directory
worker's tests prove that a bad, emptied or vanished file never changes its namespace by itself.
"""

from __future__ import annotations

import asyncio
import copy
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import STOCKS, TIMEZONE, WEATHER, CountingEmbedder, bare, write_catalog, writes_cut_short

from router.catalog.functions import FunctionDef, parse_catalog, parse_function, point_id
from router.catalog.limits import LimitSettings
from router.common.errors import NamespaceNotFound, Unavailable
from router.embedding import DEFAULT_MODEL, Embedder, EmbedderPool
from router.retrieval.texts import DEFAULT_TEMPLATE, template
from router.storage.base import PointData, Storage
from router.storage.client import ClientStorage
from router.storage.edge import EdgeStorage
from sync import freed_memory
from sync import reconcile as reconcile_module
from sync.files import source_label
from sync.service import CatalogService
from sync.worker import DirectorySync

pytestmark = pytest.mark.integration


@pytest.fixture(params=["edge", "memory"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    opened: Storage = EdgeStorage(tmp_path / "data") if request.param == "edge" else ClientStorage.in_memory()
    yield opened
    opened.close()


async def open_service(storage: Storage, pool: EmbedderPool) -> CatalogService:
    # Embedded storage has one writer, which keeps what it wrote; a server may have several.
    sole = isinstance(storage, EdgeStorage)
    opened = CatalogService(storage, pool, model=DEFAULT_MODEL, text=DEFAULT_TEMPLATE, sole_writer=sole)
    await opened.open()
    return opened


@pytest.fixture
async def service(storage: Storage, counting_pool: EmbedderPool) -> CatalogService:
    """The catalog writer on each storage adapter."""
    return await open_service(storage, counting_pool)


@pytest.fixture
async def worker_service(tmp_path: Path, counting_pool: EmbedderPool) -> AsyncIterator[CatalogService]:
    """The catalog writer on embedded storage, for the directory worker's tests."""
    storage = EdgeStorage(tmp_path / "data")
    yield await open_service(storage, counting_pool)
    storage.close()


def parse(*definitions: dict[str, Any]) -> list[FunctionDef]:
    return parse_catalog(list(definitions), source="test")


def text(definition: dict[str, Any]) -> str:
    """What the service embeds for a definition."""
    return template(DEFAULT_TEMPLATE)(parse_function(definition, where="test"))


def stored(service: CatalogService, namespace: str) -> dict[str, dict[str, Any]]:
    """Every stored point payload of a namespace, by function name."""
    records = service.index.store.collection.scroll({"namespace": namespace})
    return {r.payload["name"]: r.payload for r in records}


def search(service: CatalogService, namespace: str, query: str, embedder: Embedder) -> list[str]:
    """The names of the nearest functions, embedding the query with the real (uncounted) model."""
    vector = embedder.encode([query])[0]
    return [s.function.name for s in service.index.store.search(namespace, vector.tolist(), limit=3)]


async def test_new_functions_are_added_and_embedded_once(service: CatalogService, counting: CountingEmbedder) -> None:
    summary = await service.apply("tools", parse(WEATHER, STOCKS, TIMEZONE), source="test")

    assert summary.counts() == {"added": 3, "updated": 0, "removed": 0, "unchanged": 0}
    assert len(counting.calls) == 1
    assert sorted(counting.texts()) == sorted([text(WEATHER), text(STOCKS), text(TIMEZONE)])
    points = stored(service, "tools")
    assert {name: p["definition"] for name, p in points.items()} == {
        "get_weather": WEATHER,
        "get_stock_price": STOCKS,
        "get_local_time": TIMEZONE,
    }
    assert {p["hash"] for p in points.values()} == {f.content_hash for f in parse(WEATHER, STOCKS, TIMEZONE)}
    record = service.meta.catalog("tools")
    assert record is not None
    assert (record.source, record.count) == ("test", 3)


@pytest.mark.parametrize("chunk", [256, 1], ids=["one write", "a write per function"])
async def test_each_function_keeps_its_facets_its_own_vector_then_each_parameters(
    service: CatalogService, counting: CountingEmbedder, embedder: Embedder, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(reconcile_module, "WRITE_CHUNK", chunk)
    two = bare("get_forecast", "Weather forecast for a city.", city="City name", days="Days ahead")
    await service.apply("tools", parse(WEATHER, two), source="test")

    facets = service.index.store.facets("tools", ["get_weather", "get_forecast"])

    # "city: City name" is embedded once for both functions, in one write or in two.
    assert sorted(t for call in counting.facet_calls for t in call) == ["city: City name", "days: Days ahead"]
    assert [len(facets[n]) for n in ("get_weather", "get_forecast")] == [2, 3]
    own = embedder.encode([text(WEATHER), "city: City name"])
    assert (facets["get_weather"] * own).sum(axis=1).min() >= 0.999  # stored in float16


async def test_the_sole_writer_diffs_against_what_it_wrote_until_a_write_fails(
    worker_service: CatalogService, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = worker_service.index.store
    read: list[str] = []
    hashes = store.hashes
    monkeypatch.setattr(store, "hashes", lambda namespace: read.append(namespace) or hashes(namespace))
    await worker_service.apply("tools", parse(WEATHER, STOCKS), source="test")
    changed = dict(STOCKS, description="Latest price and daily change of a listed share.")

    summary = await worker_service.apply("tools", parse(WEATHER, changed), source="test")
    news = bare("get_news", "Latest news headlines on a topic.", topic="Topic")
    with writes_cut_short(store), pytest.raises(OSError, match="disk full"):
        await worker_service.apply("tools", parse(WEATHER, news), source="test")
    after = await worker_service.apply("tools", parse(WEATHER, changed), source="test")

    assert summary.counts() == {"added": 0, "updated": 1, "removed": 0, "unchanged": 1}
    assert read == ["tools", "tools"]  # the first apply, and the one after the write cut short
    assert after.counts() == {"added": 0, "updated": 0, "removed": 1, "unchanged": 2}
    assert sorted(stored(worker_service, "tools")) == ["get_stock_price", "get_weather"]


async def test_a_change_whose_record_failed_is_recorded_by_the_next_apply(
    service: CatalogService, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = service  # embedded (the sole writer, which keeps what it wrote) and a server
    await writer.apply("tools", parse(WEATHER), source="test")
    put = writer.meta.put_catalog

    def fails(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk full")

    monkeypatch.setattr(writer.meta, "put_catalog", fails)
    with pytest.raises(OSError, match="disk full"):
        await writer.apply("tools", parse(WEATHER, STOCKS), source="test")  # the functions are written
    monkeypatch.setattr(writer.meta, "put_catalog", put)
    retried = await writer.apply("tools", parse(WEATHER, STOCKS), source="test")

    record = writer.meta.catalog("tools")
    assert retried.counts()["added"] == 0  # nothing left to embed
    assert record is not None
    assert record.count == 2


async def test_a_function_stored_without_facets_has_none_to_give(service: CatalogService) -> None:
    # As a generation written before facets were kept, served until its rebuild.
    await service.apply("tools", parse(WEATHER, STOCKS), source="test")
    collection = service.index.store.collection
    [record] = collection.retrieve([point_id("tools", "get_weather")])
    older = {k: v for k, v in record.payload.items() if k != "facets"}
    collection.upsert([PointData(id=record.id, payload=older, dense=[1.0] + [0.0] * 383)])

    assert list(service.index.store.facets("tools", ["get_weather", "get_stock_price"])) == ["get_stock_price"]


async def test_a_large_apply_gives_freed_memory_back_once_shortly_after(
    service: CatalogService, monkeypatch: pytest.MonkeyPatch
) -> None:
    trims: list[float] = []
    after = 0.5  # long beside two applies of a few functions, even on a busy machine
    monkeypatch.setattr(freed_memory, "WRITE_CHUNK", 2)  # "large" from two functions on
    monkeypatch.setattr(freed_memory, "TRIM_AFTER", after)
    monkeypatch.setattr(freed_memory, "give_back_freed_memory", lambda: trims.append(time.monotonic()))

    await service.apply("small", parse(WEATHER), source="test")
    await asyncio.sleep(after + 0.2)
    assert trims == []
    applied = time.monotonic()
    await service.apply("tools", parse(WEATHER, STOCKS), source="test")
    await service.apply("tools", parse(WEATHER, STOCKS, TIMEZONE), source="test")
    for _ in range(100):  # the trim runs in a worker thread: wait for it rather than for a fixed time
        if trims:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(after + 0.2)

    assert len(trims) == 1  # the two applies share one trim
    assert trims[0] - applied >= after


async def test_reapplying_the_same_catalog_embeds_and_writes_nothing(
    service: CatalogService, counting: CountingEmbedder
) -> None:
    await service.apply("tools", parse(WEATHER, STOCKS), source="test")
    before = (stored(service, "tools"), service.meta.catalog("tools"))
    counting.reset()

    summary = await service.apply("tools", parse(STOCKS, WEATHER), source="test")

    assert summary.counts() == {"added": 0, "updated": 0, "removed": 0, "unchanged": 2}
    assert counting.calls == []
    assert (stored(service, "tools"), service.meta.catalog("tools")) == before


async def test_only_the_changed_function_is_re_embedded(
    service: CatalogService, counting: CountingEmbedder, embedder: Embedder
) -> None:
    await service.apply("tools", parse(WEATHER, STOCKS, TIMEZONE), source="test")
    counting.reset()
    rates = bare("get_weather", "Exchange rate between two currencies, for converting money.", pair="Currency pair")

    summary = await service.apply("tools", parse(rates, STOCKS, TIMEZONE), source="test")

    assert summary.counts() == {"added": 0, "updated": 1, "removed": 0, "unchanged": 2}
    assert counting.calls == [[text(rates)]]
    assert stored(service, "tools")["get_weather"]["definition"] == rates
    # The vector was replaced too: the function is now found by its new meaning.
    assert search(service, "tools", "convert euros to dollars", embedder)[0] == "get_weather"


async def test_a_function_no_longer_listed_is_removed(
    service: CatalogService, counting: CountingEmbedder, embedder: Embedder
) -> None:
    await service.apply("tools", parse(WEATHER, STOCKS, TIMEZONE), source="test")
    counting.reset()

    summary = await service.apply("tools", parse(STOCKS), source="test")

    assert summary.counts() == {"added": 0, "updated": 0, "removed": 2, "unchanged": 1}
    assert counting.calls == []
    assert set(stored(service, "tools")) == {"get_stock_price"}
    assert service.index.store.count("tools") == 1
    assert search(service, "tools", "weather in Paris", embedder) == ["get_stock_price"]
    record = service.meta.catalog("tools")
    assert record is not None
    assert record.count == 1


async def test_add_change_remove_and_keep_in_one_reconcile(service: CatalogService, counting: CountingEmbedder) -> None:
    await service.apply("tools", parse(WEATHER, STOCKS, TIMEZONE), source="test")
    counting.reset()
    changed = {**STOCKS, "description": "Latest price and daily change of a listed share."}
    added = bare("get_news", "Latest news headlines on a topic.", topic="Topic")

    summary = await service.apply("tools", parse(WEATHER, changed, added), source="test")

    assert summary.counts() == {"added": 1, "updated": 1, "removed": 1, "unchanged": 1}
    assert len(counting.calls) == 1
    assert sorted(counting.texts()) == sorted([text(added), text(changed)])
    assert set(stored(service, "tools")) == {"get_weather", "get_stock_price", "get_news"}


async def test_reconcile_is_idempotent_whatever_the_history(
    service: CatalogService, counting: CountingEmbedder
) -> None:
    final = parse(WEATHER, {**STOCKS, "description": "v2"})
    await service.apply("a", parse(STOCKS, TIMEZONE), source="test")
    await service.apply("a", final, source="test")
    await service.apply("b", final, source="test")
    counting.reset()

    again = await service.apply("a", final, source="test")

    assert again.counts() == {"added": 0, "updated": 0, "removed": 0, "unchanged": 2}
    assert counting.calls == []
    strip = {"namespace"}
    a = {n: {k: v for k, v in p.items() if k not in strip} for n, p in stored(service, "a").items()}
    b = {n: {k: v for k, v in p.items() if k not in strip} for n, p in stored(service, "b").items()}
    assert a == b


async def test_a_key_order_change_is_not_a_change(service: CatalogService, counting: CountingEmbedder) -> None:
    await service.apply("tools", parse(WEATHER), source="test")
    counting.reset()
    reordered = json.loads(json.dumps(dict(reversed(list(WEATHER.items())))))

    summary = await service.apply("tools", parse(reordered), source="test")

    assert summary.unchanged == 1
    assert counting.calls == []


async def test_namespaces_are_isolated(service: CatalogService, embedder: Embedder) -> None:
    await service.apply("a", parse(WEATHER, STOCKS), source="test")
    await service.apply("b", parse(WEATHER), source="test")

    summary = await service.apply("a", parse(STOCKS), source="test")

    assert summary.removed == 1
    assert set(stored(service, "b")) == {"get_weather"}
    assert search(service, "a", "weather in Paris", embedder) == ["get_stock_price"]
    assert search(service, "b", "stock price of ACME", embedder) == ["get_weather"]


async def test_applying_an_empty_catalog_empties_but_keeps_the_namespace(service: CatalogService) -> None:
    await service.apply("tools", parse(WEATHER, STOCKS), source="test")

    summary = await service.apply("tools", [], source="test")

    assert summary.removed == 2
    assert stored(service, "tools") == {}
    record = service.meta.catalog("tools")
    assert record is not None
    assert record.count == 0


async def test_remove_deletes_functions_and_record(service: CatalogService, counting: CountingEmbedder) -> None:
    await service.apply("tools", parse(WEATHER, STOCKS), source="test")
    await service.apply("other", parse(WEATHER), source="test")
    counting.reset()

    summary = await service.remove("tools")

    assert summary.counts() == {"added": 0, "updated": 0, "removed": 2, "unchanged": 0}
    assert counting.calls == []
    assert stored(service, "tools") == {}
    assert set(await service.catalogs.records()) == {"other"}
    with pytest.raises(NamespaceNotFound, match="no catalog named 'tools'"):
        await service.remove("tools")
    with pytest.raises(NamespaceNotFound):
        await service.catalogs.functions("tools")


async def test_a_new_source_is_recorded_without_re_embedding(
    service: CatalogService, counting: CountingEmbedder
) -> None:
    await service.apply("tools", parse(WEATHER), source="dir:/somewhere")
    counting.reset()

    await service.apply("tools", parse(WEATHER), source="api")

    record = service.meta.catalog("tools")
    assert record is not None
    assert record.source == "api"
    assert counting.calls == []


# The directory worker.

GOOD = [WEATHER, STOCKS, TIMEZONE]


def with_bad_second(change: dict[str, Any]) -> list[Any]:
    functions = copy.deepcopy(GOOD)
    functions[1].update(change)
    return functions


BAD_FILES: dict[str, tuple[str, str | list[Any], str]] = {
    # case: (suffix, document or raw text, what the error must name after the file)
    "missing-name": (".json", [WEATHER, {"description": "no name"}], "[1].name"),
    "malformed-name": (".json", with_bad_second({"name": "get stock price"}), "[1].name"),
    "long-name": (".json", with_bad_second({"name": "x" * 65}), "[1].name"),
    "duplicate-name": (".json", with_bad_second({"name": "get_weather"}), "[1].name"),
    "description-not-string": (".json", with_bad_second({"description": ["a", "b"]}), "[1].description"),
    "parameters-not-object": (".json", with_bad_second({"parameters": "ticker: str"}), "[1].parameters"),
    "parameters-not-object-schema": (".json", with_bad_second({"parameters": {"type": "array"}}), "[1].parameters"),
    "invalid-json": (".json", '[{"name": "get_weather",}]', "cannot be parsed"),
    "invalid-yaml": (".yaml", "- name: get_weather\n  description: [unclosed\n", "cannot be parsed"),
}


def write_raw(directory: Path, namespace: str, suffix: str, document: str | list[Any]) -> Path:
    if isinstance(document, str):
        path = directory / f"{namespace}{suffix}"
        path.write_text(document)
        return path
    return write_catalog(directory, namespace, document, suffix=suffix)


@pytest.mark.parametrize("case", sorted(BAD_FILES))
async def test_a_rejected_file_changes_nothing_in_its_namespace(
    worker_service: CatalogService, counting: CountingEmbedder, catalog_dir: Path, case: str
) -> None:
    suffix, document, named = BAD_FILES[case]
    write_catalog(catalog_dir, "tools", GOOD, suffix=suffix)
    write_catalog(catalog_dir, "other", [WEATHER])
    worker = DirectorySync(worker_service, catalog_dir)
    await worker.run_once()
    before = (stored(worker_service, "tools"), worker_service.meta.catalog("tools"))
    counting.reset()
    path = write_raw(catalog_dir, "tools", suffix, document)
    write_catalog(catalog_dir, "other", [WEATHER, STOCKS])

    report = await worker.run_once()

    [rejected] = report.rejected
    assert rejected.namespace == "tools"
    assert rejected.error is not None
    assert rejected.error.startswith(f"{path}: {named}")
    assert (stored(worker_service, "tools"), worker_service.meta.catalog("tools")) == before
    # The good file of the same pass still went through.
    assert [o.summary.counts() for o in report.outcomes if o.summary] == [
        {"added": 1, "updated": 0, "removed": 0, "unchanged": 1}
    ]
    assert counting.calls == [[text(STOCKS)]]


async def test_a_namespace_that_fails_to_apply_holds_back_no_other(
    worker_service: CatalogService, catalog_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_catalog(catalog_dir, "aaa", [WEATHER])
    write_catalog(catalog_dir, "zzz", [STOCKS])
    apply = worker_service.apply

    async def broken(namespace: str, *args: Any, **kwargs: Any) -> Any:
        if namespace == "aaa":
            raise RuntimeError("a bug in one namespace")
        return await apply(namespace, *args, **kwargs)

    monkeypatch.setattr(worker_service, "apply", broken)
    worker = DirectorySync(worker_service, catalog_dir)
    with pytest.raises(RuntimeError):  # the pass fails, to be tried again
        await worker.run_once()
    assert list(stored(worker_service, "zzz")) == ["get_stock_price"]

    monkeypatch.setattr(worker_service, "apply", apply)
    report = await worker.run_once()
    assert [o.namespace for o in report.outcomes] == ["aaa"]
    assert list(stored(worker_service, "aaa")) == ["get_weather"]


async def test_a_model_that_is_down_ends_the_pass_at_the_first_file(
    worker_service: CatalogService, catalog_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_catalog(catalog_dir, "aaa", [WEATHER])
    write_catalog(catalog_dir, "zzz", [STOCKS])
    tried: list[str] = []

    async def down(namespace: str, *args: Any, **kwargs: Any) -> Any:
        tried.append(namespace)
        raise Unavailable("the embedding service cannot be reached")

    monkeypatch.setattr(worker_service, "apply", down)
    with pytest.raises(Unavailable):  # every other file would wait on it as long
        await DirectorySync(worker_service, catalog_dir).run_once()
    assert tried == ["aaa"]


async def test_a_file_over_the_functions_limit_is_rejected_naming_the_setting(
    tmp_path: Path, counting_pool: EmbedderPool, catalog_dir: Path
) -> None:
    storage = EdgeStorage(tmp_path / "limited")
    limits = LimitSettings(functions=2)
    service = CatalogService(storage, counting_pool, model=DEFAULT_MODEL, text=DEFAULT_TEMPLATE, limits=limits)
    await service.open()
    try:
        write_catalog(catalog_dir, "tools", [WEATHER, STOCKS])
        await DirectorySync(service, catalog_dir).run_once()
        write_catalog(catalog_dir, "tools", GOOD)

        report = await DirectorySync(service, catalog_dir).run_once()

        [rejected] = report.rejected
        assert rejected.error is not None
        assert "functions: 3 functions; at most 2 per catalog (ROUTER_LIMIT_FUNCTIONS)" in rejected.error
        assert sorted(stored(service, "tools")) == ["get_stock_price", "get_weather"]
        assert service.log.results["tools"].outcome == "rejected"
    finally:
        storage.close()


async def test_a_fixed_file_is_applied_after_a_rejection(worker_service: CatalogService, catalog_dir: Path) -> None:
    write_catalog(catalog_dir, "tools", GOOD)
    worker = DirectorySync(worker_service, catalog_dir)
    await worker.run_once()
    (catalog_dir / "tools.json").write_text("[")
    assert (await worker.run_once()).rejected

    write_catalog(catalog_dir, "tools", [WEATHER])
    report = await worker.run_once()

    assert [o.summary.counts() for o in report.outcomes if o.summary] == [
        {"added": 0, "updated": 0, "removed": 2, "unchanged": 1}
    ]


async def test_a_rejected_file_on_a_fresh_start_keeps_the_stored_catalog(
    worker_service: CatalogService, catalog_dir: Path
) -> None:
    write_catalog(catalog_dir, "tools", GOOD)
    await DirectorySync(worker_service, catalog_dir).run_once()
    before = stored(worker_service, "tools")
    (catalog_dir / "tools.json").write_text("{not json")

    report = await DirectorySync(worker_service, catalog_dir).run_once()

    assert [o.namespace for o in report.rejected] == ["tools"]
    assert stored(worker_service, "tools") == before


async def test_an_unchanged_directory_does_nothing_on_the_next_pass(
    worker_service: CatalogService, counting: CountingEmbedder, catalog_dir: Path
) -> None:
    write_catalog(catalog_dir, "tools", GOOD)
    worker = DirectorySync(worker_service, catalog_dir)
    first = await worker.run_once()
    counting.reset()

    second = await worker.run_once()

    assert [o.summary.counts() for o in first.outcomes if o.summary] == [
        {"added": 3, "updated": 0, "removed": 0, "unchanged": 0}
    ]
    assert second.outcomes == []
    assert counting.calls == []


async def test_a_new_worker_reconciles_every_file_and_embeds_only_what_changed(
    worker_service: CatalogService, counting: CountingEmbedder, catalog_dir: Path
) -> None:
    write_catalog(catalog_dir, "tools", GOOD)
    write_catalog(catalog_dir, "other", [WEATHER])
    await DirectorySync(worker_service, catalog_dir).run_once()
    write_catalog(catalog_dir, "other", [WEATHER, STOCKS])
    counting.reset()

    # A restart: a new worker, no memory of the files; the stored hashes tell what changed.
    report = await DirectorySync(worker_service, catalog_dir).run_once()

    assert {o.namespace: o.summary.counts() for o in report.outcomes if o.summary} == {
        "tools": {"added": 0, "updated": 0, "removed": 0, "unchanged": 3},
        "other": {"added": 1, "updated": 0, "removed": 0, "unchanged": 1},
    }
    assert counting.embedded == 1
    assert sorted(stored(worker_service, "other")) == sorted([WEATHER["name"], STOCKS["name"]])


@pytest.mark.parametrize("restart", [False, True], ids=["same worker", "after a restart"])
async def test_a_write_cut_short_is_never_taken_for_the_file_it_replaced(
    worker_service: CatalogService, catalog_dir: Path, restart: bool
) -> None:
    write_catalog(catalog_dir, "tools", GOOD)
    worker = DirectorySync(worker_service, catalog_dir)
    await worker.run_once()
    news = bare("get_news", "Latest news headlines on a topic.", topic="Topic")
    write_catalog(catalog_dir, "tools", [WEATHER, news])
    with writes_cut_short(worker_service.index.store), pytest.raises(OSError, match="disk full"):
        await worker.run_once()
    write_catalog(catalog_dir, "tools", GOOD)  # back to the bytes the store was last fully written from

    report = await (DirectorySync(worker_service, catalog_dir) if restart else worker).run_once()

    [outcome] = report.outcomes
    assert outcome.summary is not None
    assert outcome.summary.counts()["removed"] == 1
    assert sorted(stored(worker_service, "tools")) == sorted(f["name"] for f in GOOD)


async def test_an_api_write_cut_short_is_never_taken_for_the_recorded_file(
    worker_service: CatalogService, catalog_dir: Path
) -> None:
    write_catalog(catalog_dir, "tools", GOOD)
    await DirectorySync(worker_service, catalog_dir).run_once()
    news = bare("get_news", "Latest news headlines on a topic.", topic="Topic")
    with writes_cut_short(worker_service.index.store), pytest.raises(OSError, match="disk full"):
        await worker_service.apply("tools", parse(WEATHER, news), source="api")

    report = await DirectorySync(worker_service, catalog_dir).run_once()

    [outcome] = report.outcomes
    assert outcome.summary is not None
    assert outcome.summary.counts()["removed"] == 1
    assert sorted(stored(worker_service, "tools")) == sorted(f["name"] for f in GOOD)


async def test_a_file_written_over_by_the_api_is_taken_back_without_re_embedding(
    worker_service: CatalogService, counting: CountingEmbedder, catalog_dir: Path
) -> None:
    write_catalog(catalog_dir, "tools", GOOD)
    await DirectorySync(worker_service, catalog_dir).run_once()
    await worker_service.apply("tools", parse(*GOOD), source="api")
    counting.reset()

    report = await DirectorySync(worker_service, catalog_dir).run_once()

    after = worker_service.meta.catalog("tools")
    assert after is not None
    assert after.source == source_label(catalog_dir)
    assert [o.summary.counts() for o in report.outcomes if o.summary] == [
        {"added": 0, "updated": 0, "removed": 0, "unchanged": 3}
    ]
    assert counting.calls == []


@pytest.mark.parametrize("content", ["", "[]", '{"functions": []}'])
async def test_an_emptied_file_keeps_its_namespace(
    worker_service: CatalogService, catalog_dir: Path, content: str
) -> None:
    write_catalog(catalog_dir, "tools", GOOD)
    worker = DirectorySync(worker_service, catalog_dir)
    await worker.run_once()
    before = stored(worker_service, "tools")
    (catalog_dir / "tools.json").write_text(content)

    report = await worker.run_once()

    [outcome] = report.outcomes
    assert outcome.skipped is not None
    assert "lists no function" in outcome.skipped
    assert stored(worker_service, "tools") == before
    assert "tools" in await worker_service.catalogs.records()
    # The status says the file was not applied, once.
    last = worker_service.log.results["tools"]
    assert (last.outcome, last.detail) == ("kept", outcome.skipped)
    assert (await worker.run_once()).outcomes == []
    # Put back as it was, the file is the catalog's source again, and the status says so.
    write_catalog(catalog_dir, "tools", GOOD)
    assert [o.summary.counts()["unchanged"] for o in (await worker.run_once()).outcomes if o.summary] == [3]
    assert worker_service.log.results["tools"].outcome == "unchanged"
    # Emptied, then removed: its going is said too.
    (catalog_dir / "tools.json").write_text(content)
    await worker.run_once()
    (catalog_dir / "tools.json").unlink()
    [gone] = (await worker.run_once()).outcomes
    assert gone.skipped is not None
    assert "is gone" in gone.skipped


async def test_a_new_empty_file_says_no_catalog_is_stored(worker_service: CatalogService, catalog_dir: Path) -> None:
    (catalog_dir / "empty.json").write_text("[]")

    [outcome] = (await DirectorySync(worker_service, catalog_dir).run_once()).outcomes

    assert outcome.skipped == f"{catalog_dir / 'empty.json'} lists no function; no catalog is stored for it"
    assert "empty" not in await worker_service.catalogs.records()


async def test_an_emptied_file_deletes_its_namespace_with_allow_delete(
    worker_service: CatalogService, catalog_dir: Path
) -> None:
    write_catalog(catalog_dir, "tools", GOOD)
    worker = DirectorySync(worker_service, catalog_dir, allow_delete=True)
    await worker.run_once()
    (catalog_dir / "tools.json").write_text("")

    report = await worker.run_once()

    assert [o.summary.counts() for o in report.outcomes if o.summary] == [
        {"added": 0, "updated": 0, "removed": 3, "unchanged": 0}
    ]
    assert stored(worker_service, "tools") == {}
    assert "tools" not in await worker_service.catalogs.records()


async def test_a_removed_file_keeps_its_namespace(worker_service: CatalogService, catalog_dir: Path) -> None:
    write_catalog(catalog_dir, "tools", GOOD)
    worker = DirectorySync(worker_service, catalog_dir)
    await worker.run_once()
    before = stored(worker_service, "tools")
    (catalog_dir / "tools.json").unlink()

    first = await worker.run_once()
    second = await worker.run_once()

    [outcome] = first.outcomes
    assert outcome.namespace == "tools"
    assert outcome.skipped is not None
    assert "is gone; kept the stored catalog" in outcome.skipped
    assert second.outcomes == []  # reported once
    assert worker_service.log.results["tools"].outcome == "kept"
    assert stored(worker_service, "tools") == before


async def test_a_file_removed_while_stopped_keeps_its_namespace(
    worker_service: CatalogService, catalog_dir: Path
) -> None:
    write_catalog(catalog_dir, "tools", GOOD)
    await DirectorySync(worker_service, catalog_dir).run_once()
    (catalog_dir / "tools.json").unlink()

    report = await DirectorySync(worker_service, catalog_dir).run_once()

    assert [(o.namespace, o.skipped is not None) for o in report.outcomes] == [("tools", True)]
    assert set(stored(worker_service, "tools")) == {"get_weather", "get_stock_price", "get_local_time"}


async def test_a_removed_file_deletes_its_namespace_with_allow_delete(
    worker_service: CatalogService, catalog_dir: Path
) -> None:
    write_catalog(catalog_dir, "tools", GOOD)
    write_catalog(catalog_dir, "kept", [WEATHER])
    await DirectorySync(worker_service, catalog_dir).run_once()
    (catalog_dir / "tools.json").unlink()

    report = await DirectorySync(worker_service, catalog_dir, allow_delete=True).run_once()

    assert {o.namespace: o.summary.counts() for o in report.outcomes if o.summary} == {
        "kept": {"added": 0, "updated": 0, "removed": 0, "unchanged": 1},
        "tools": {"added": 0, "updated": 0, "removed": 3, "unchanged": 0},
    }
    assert set(await worker_service.catalogs.records()) == {"kept"}
    assert stored(worker_service, "tools") == {}


async def test_allow_delete_only_touches_namespaces_of_its_own_directory(
    worker_service: CatalogService, catalog_dir: Path, tmp_path: Path
) -> None:
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    write_catalog(other_dir, "elsewhere", [WEATHER])
    await DirectorySync(worker_service, other_dir).run_once()
    await worker_service.apply("from_api", parse(STOCKS), source="api")
    write_catalog(catalog_dir, "mine", [TIMEZONE])

    report = await DirectorySync(worker_service, catalog_dir, allow_delete=True).run_once()

    assert [o.namespace for o in report.outcomes] == ["mine"]
    catalogs = await worker_service.catalogs.records()
    assert set(catalogs) == {"elsewhere", "from_api", "mine"}
    assert catalogs["mine"].source == source_label(catalog_dir)
    assert catalogs["elsewhere"].source == source_label(other_dir)


async def test_a_missing_directory_is_an_error(worker_service: CatalogService, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        await DirectorySync(worker_service, tmp_path / "nowhere").run_once()
