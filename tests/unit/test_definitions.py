"""The definition cache: searches name functions, definitions come from memory or one fetch."""

from __future__ import annotations

from collections.abc import Sequence

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
