"""Planning a reconcile: what to add, update, remove and leave alone."""

from __future__ import annotations

from typing import Any

from router.catalog.functions import FunctionDef, parse_function
from sync.diff import Plan, Summary, plan


def fn(name: str, description: str = "does things", **extra: Any) -> FunctionDef:
    return parse_function({"name": name, "description": description, **extra}, where="t")


def stored(*functions: FunctionDef) -> dict[str, str]:
    return {f.name: f.content_hash for f in functions}


def names(functions: list[FunctionDef]) -> list[str]:
    return [f.name for f in functions]


def test_everything_is_added_to_an_empty_namespace() -> None:
    result = plan([fn("a"), fn("b")], {})

    assert names(result.added) == ["a", "b"]
    assert (result.updated, result.removed, result.unchanged) == ([], [], [])
    assert names(result.to_embed) == ["a", "b"]


def test_identical_functions_are_unchanged_and_not_embedded() -> None:
    functions = [fn("a"), fn("b")]

    result = plan(functions, stored(*functions))

    assert result.unchanged == ["a", "b"]
    assert result.to_embed == []
    assert not Summary.of("ns", result).changed


def test_a_changed_definition_is_updated() -> None:
    result = plan([fn("a", "new words"), fn("b")], stored(fn("a"), fn("b")))

    assert names(result.updated) == ["a"]
    assert result.unchanged == ["b"]
    assert names(result.to_embed) == ["a"]


def test_a_change_anywhere_in_the_definition_counts() -> None:
    before = fn("a", parameters={"type": "object", "properties": {"x": {"type": "string"}}})
    after = fn("a", parameters={"type": "object", "properties": {"x": {"type": "integer"}}})

    assert names(plan([after], stored(before)).updated) == ["a"]


def test_stored_names_no_longer_wanted_are_removed_sorted() -> None:
    result = plan([fn("b")], stored(fn("d"), fn("b"), fn("a"), fn("c")))

    assert result.removed == ["a", "c", "d"]
    assert result.unchanged == ["b"]
    assert result.to_embed == []


def test_an_empty_desired_catalog_removes_everything() -> None:
    result = plan([], stored(fn("a"), fn("b")))

    assert result.removed == ["a", "b"]
    assert Summary.of("ns", result).counts() == {"added": 0, "updated": 0, "removed": 2, "unchanged": 0}


def test_mixed_plan_embeds_only_added_and_updated() -> None:
    result = plan(
        [fn("keep"), fn("change", "v2"), fn("new")],
        stored(fn("keep"), fn("change", "v1"), fn("gone")),
    )

    assert (names(result.added), names(result.updated), result.removed, result.unchanged) == (
        ["new"],
        ["change"],
        ["gone"],
        ["keep"],
    )
    assert names(result.to_embed) == ["new", "change"]


def test_order_of_the_desired_functions_does_not_matter() -> None:
    functions = [fn("a"), fn("b"), fn("c")]

    result = plan(list(reversed(functions)), stored(*functions))

    assert sorted(result.unchanged) == ["a", "b", "c"]
    assert result.to_embed == result.removed == []


def test_summary_counts_and_changed() -> None:
    summary = Summary.of("travel", Plan(added=[fn("a")], updated=[fn("b"), fn("c")], removed=["d"], unchanged=["e"]))

    assert summary.namespace == "travel"
    assert summary.counts() == {"added": 1, "updated": 2, "removed": 1, "unchanged": 1}
    assert summary.changed
    assert Summary("travel", removed=1).changed
    assert not Summary("travel", unchanged=4).changed
