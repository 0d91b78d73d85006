"""Planning a reconcile: what to add, update, remove and leave alone."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from router.catalog import FunctionDef, parse_function
from sync.diff import Known, Plan, Summary, plan


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


def test_fingerprints_tell_definitions_apart_by_their_bytes() -> None:
    a = fn("a", parameters={"type": "object", "properties": {"x": {"type": "number", "default": 0.5}}})

    assert fn("a").fingerprint == fn("a").fingerprint
    assert fn("a").fingerprint != fn("a", "other words").fingerprint
    assert a.fingerprint != fn("a").fingerprint
    reordered = parse_function(dict(reversed(list(fn("a").definition.items()))), where="t")
    assert reordered.fingerprint != fn("a").fingerprint
    assert reordered.content_hash == fn("a").content_hash


def test_known_plans_in_one_pass_and_follows_its_plan() -> None:
    written = [fn("a"), fn("b"), fn("d")]
    known = Known(written)
    reordered = parse_function(dict(reversed(list(fn("d").definition.items()))), where="t")
    incoming = [fn("a"), fn("b", "new words"), fn("c"), reordered]

    result = known.plan(incoming)

    assert (names(result.added), names(result.updated)) == (["c"], ["b"])
    assert result.unchanged == ["a", "d"]
    assert "content_hash" not in vars(incoming[0])  # same bytes as written: not hashed
    assert plan(incoming, stored(*written)) == result
    assert dict(known) == stored(*incoming)
    assert known.fingerprint("d") == reordered.fingerprint != fn("d").fingerprint
    assert known.fingerprint("c") == fn("c").fingerprint

    again = known.plan([fn("a")])

    assert again.removed == ["b", "c", "d"]
    assert dict(known) == stored(fn("a"))
    assert known.fingerprint("c") is None


def catalog(size: int, *, words: str = "does things") -> list[FunctionDef]:
    return [fn(f"f{i}", f"{words} {i}") for i in range(size)]


def fingerprinted(functions: list[FunctionDef]) -> int:
    """How many of ``functions`` had their own bytes serialised (``fingerprint`` computed)."""
    return sum("fingerprint" in vars(f) for f in functions)


def test_runs_whose_bytes_were_written_are_unchanged_without_a_look_at_each_definition() -> None:
    written = catalog(3000)
    known = Known(written)
    incoming = [dataclasses.replace(f) for f in written]  # new objects, as every parse makes
    incoming[1700] = fn("f1700", "new words")

    result = known.plan(incoming)

    assert names(result.updated) == ["f1700"]
    assert len(result.unchanged) == 2999
    # Only the run holding the change is looked at function by function.
    assert 1 <= fingerprinted(incoming) <= 512
    assert "fingerprint" in vars(incoming[1700])


def test_an_insertion_near_the_start_moves_one_cut_not_every_later_one() -> None:
    written = catalog(3000)
    known = Known(written)
    incoming = [dataclasses.replace(f) for f in written]
    incoming.insert(3, fn("new"))

    result = known.plan(incoming)

    assert names(result.added) == ["new"]
    assert fingerprinted(incoming) <= 1024


def test_a_record_follows_its_runs_from_one_plan_to_the_next() -> None:
    first = catalog(1500)
    second = [*first[:700], fn("f700", "changed"), *first[701:]]
    known = Known(first)

    assert names(known.plan(second).updated) == ["f700"]
    assert names(known.plan(list(first)).updated) == ["f700"]  # back to the old bytes: a change again
    assert known.plan([dataclasses.replace(f) for f in first]).unchanged == names(first)
    assert dict(known) == stored(*first)


@settings(max_examples=60, deadline=None)
@given(st.randoms(use_true_random=False), st.lists(st.sampled_from(["add", "drop", "edit", "move"]), max_size=6))
def test_planning_against_the_record_equals_planning_against_the_stored_hashes(
    rng: random.Random, edits: list[str]
) -> None:
    written = catalog(rng.randint(0, 700))
    known = Known(written)
    for step in range(3):
        incoming = [dataclasses.replace(f) for f in written]
        for edit in edits:
            at = rng.randint(0, len(incoming))
            if edit == "add":
                incoming.insert(at, fn(f"n{step}_{at}_{rng.random()}"[:60].replace(".", "_")))
            elif incoming and edit == "drop":
                incoming.pop(min(at, len(incoming) - 1))
            elif incoming and edit == "edit":
                old = incoming[min(at, len(incoming) - 1)]
                incoming[min(at, len(incoming) - 1)] = fn(old.name, f"edited {rng.random()}")
            elif incoming and edit == "move":
                incoming.append(incoming.pop(min(at, len(incoming) - 1)))
        incoming = list({f.name: f for f in incoming}.values())

        assert known.plan(incoming) == plan(incoming, stored(*written))
        assert dict(known) == stored(*incoming)
        written = incoming
