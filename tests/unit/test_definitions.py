"""The definition cache: searches name functions, definitions come from memory or one fetch."""

from __future__ import annotations

import asyncio
import gc
import platform
import threading
from collections.abc import Sequence

import pytest

from router import heap
from router.catalog import FunctionDef, parse_function, point_id
from router.retrieval.definitions import DefinitionCache
from router.storage.base import Record


def fn(name: str, description: str = "does things") -> FunctionDef:
    return parse_function({"name": name, "description": description}, where=name)


class Store:
    """Point ids to records, counting what each fetch asked for."""

    def __init__(self, *functions: FunctionDef) -> None:
        self.records = {point_id("ns", f.name): _record(f) for f in functions}
        self.asked: list[list[str]] = []

    def fetch(self, ids: Sequence[str]) -> list[Record]:
        self.asked.append(list(ids))
        return [self.records[i] for i in ids if i in self.records]


def _record(function: FunctionDef) -> Record:
    payload = {"name": function.name, "hash": function.content_hash, "definition": dict(function.definition)}
    return Record(id=point_id("ns", function.name), payload=payload)


def test_only_missing_definitions_are_fetched() -> None:
    a, b = fn("a"), fn("b")
    store, cache = Store(a, b), DefinitionCache()

    first = cache.resolve("ns", {"a": a.content_hash}, store.fetch)
    both = cache.resolve("ns", {"a": a.content_hash, "b": b.content_hash}, store.fetch)
    again = cache.resolve("ns", {"b": b.content_hash, "a": a.content_hash}, store.fetch)

    assert first == {"a": a}
    assert both == {"a": a, "b": b}
    assert again == {"a": a, "b": b}
    assert store.asked == [[point_id("ns", "a")], [point_id("ns", "b")]]


def test_a_new_version_is_fetched_and_a_vanished_function_left_out() -> None:
    old, new = fn("a", "old words"), fn("a", "new words")
    store, cache = Store(old), DefinitionCache()
    cache.resolve("ns", {"a": old.content_hash}, store.fetch)
    store.records = {point_id("ns", "a"): _record(new)}

    changed = cache.resolve("ns", {"a": new.content_hash}, store.fetch)
    store.records = {}
    gone = cache.resolve("ns", {"b": "0" * 64}, store.fetch)

    assert changed["a"].description == "new words"
    assert gone == {}


def test_namespaces_do_not_share_entries() -> None:
    a = fn("a")
    store, cache = Store(a), DefinitionCache()
    cache.resolve("ns", {"a": a.content_hash}, store.fetch)

    assert cache.resolve("other", {"a": a.content_hash}, store.fetch) == {}
    assert store.asked[-1] == [point_id("other", "a")]


def test_least_recently_used_goes_first_when_full() -> None:
    functions = [fn(f"f{i}") for i in range(3)]
    store, cache = Store(*functions), DefinitionCache(size=2)
    for f in functions[:2]:
        cache.resolve("ns", {f.name: f.content_hash}, store.fetch)
    cache.resolve("ns", {"f0": functions[0].content_hash}, store.fetch)  # f1 is now the oldest
    cache.resolve("ns", {"f2": functions[2].content_hash}, store.fetch)
    store.asked.clear()

    cache.resolve("ns", {"f0": functions[0].content_hash}, store.fetch)
    cache.resolve("ns", {"f1": functions[1].content_hash}, store.fetch)

    assert len(cache) == 2
    assert store.asked == [[point_id("ns", "f1")]]


def test_heap_release_runs_and_release_soon_coalesces(monkeypatch: pytest.MonkeyPatch) -> None:
    assert heap.release() is (platform.libc_ver()[0] == "glibc")
    calls: list[int] = []
    monkeypatch.setattr(heap, "release", lambda: bool(calls.append(1)))

    async def twice() -> tuple[bool, bool]:
        loop = asyncio.get_running_loop()
        heap.release_soon(0.01)
        heap.release_soon(0.01)
        pending = loop in heap._scheduled
        await asyncio.sleep(0.2)
        return pending, loop in heap._scheduled

    assert asyncio.run(twice()) == (True, False)
    assert calls == [1]


def test_bulk_pauses_the_collector_until_the_last_one_ends() -> None:
    assert gc.isenabled()
    with heap.bulk():
        assert not gc.isenabled()
        with heap.bulk():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with heap.bulk():
            pass
        assert not gc.isenabled()  # it was off before: it stays off
    finally:
        gc.enable()


def test_bulk_from_two_threads_resumes_once_both_end() -> None:
    inside, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with heap.bulk():
            inside.set()
            leave.wait(5)

    thread = threading.Thread(target=hold)
    thread.start()
    inside.wait(5)
    with heap.bulk():
        pass
    assert not gc.isenabled()  # the other thread's bulk is still on
    leave.set()
    thread.join(5)
    assert gc.isenabled()


def test_settle_freezes_what_is_alive() -> None:
    try:
        heap.settle()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
