"""The pinned functions kept in memory for routes that cannot reach storage."""

from __future__ import annotations

from router.catalog.functions import FunctionDef, parse_function
from router.retrieval.catalogs import KNOWN_PER_NAMESPACE, PinnedFunctions


def function(name: str, description: str = "") -> FunctionDef:
    return parse_function({"name": name, "description": description}, where=name)


def names(found: list[FunctionDef] | None) -> list[str] | None:
    return None if found is None else [f.name for f in found]


def test_an_unknown_namespace_has_no_answer() -> None:
    assert PinnedFunctions().answer("tools", ["a"]) is None


def test_catalog_pins_come_first_then_the_requested_ones_known() -> None:
    pins = PinnedFunctions()
    pins.written("tools", [function("a"), function("b"), function("c")], ["b"])
    pins.seen("tools", ["b"], [function("b"), function("c")])

    assert names(pins.answer("tools", [])) == ["b"]
    assert names(pins.answer("tools", ["c", "b", "nowhere"])) == ["b", "c"]


def test_a_write_forgets_removed_functions_and_keeps_changed_ones_current() -> None:
    pins = PinnedFunctions()
    pins.written("tools", [function("a"), function("b")], ["a"])
    pins.seen("tools", ["a"], [function("a"), function("b")])

    pins.written("tools", [function("b", "changed")], [])

    assert names(pins.answer("tools", ["a", "b"])) == ["b"]
    assert [f.description for f in pins.answer("tools", ["b"]) or []] == ["changed"]


def test_a_deleted_catalog_is_forgotten() -> None:
    pins = PinnedFunctions()
    pins.written("tools", [function("a")], ["a"])
    pins.deleted("tools")

    assert pins.answer("tools", ["a"]) is None


def test_requested_pins_are_bounded_and_catalog_pins_never_evicted() -> None:
    pins = PinnedFunctions()
    many = [function(f"f{i}") for i in range(KNOWN_PER_NAMESPACE + 10)]
    pins.seen("tools", ["f0"], many)

    known = names(pins.answer("tools", [f.name for f in many])) or []
    assert len(known) == KNOWN_PER_NAMESPACE
    assert known[0] == "f0"
    assert known[-1] == many[-1].name  # the oldest requested ones went first
    assert "f1" not in known
