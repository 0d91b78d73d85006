"""A split catalog body planned against the record of the last write: only fresh bytes are decoded."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from router.catalog import parse_document
from router.catalog_body import CatalogBody, split
from router.errors import InvalidRequest
from router.limits import LimitSettings, check_document
from sync import delta as delta_module
from sync.delta import Delta, resolve
from sync.diff import Known, plan

LIMITS = LimitSettings(text_chars=200, depth=8)


def definition(name: str, description: str = "does things", **extra: Any) -> dict[str, Any]:
    return {"name": name, "description": description, **extra}


def body_of(definitions: list[Any], pinned: list[str] | None = None, **dumps: Any) -> bytes:
    document: dict[str, Any] = {"functions": definitions}
    if pinned is not None:
        document["pinned"] = pinned
    return json.dumps(document, **dumps).encode()


def cut(data: bytes) -> CatalogBody:
    body = split(data, "PUT /v1/catalogs/t")
    assert body is not None
    return body


def written(definitions: list[dict[str, Any]]) -> Known:
    """The record of a write of ``definitions`` from a split body."""
    body = cut(body_of(definitions))
    return Known(body.document(LIMITS).functions, body.digests)


def basis(known: Known) -> Any:
    assert known.parts is not None
    return known.parts


def decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    seen: list[int] = []
    original = CatalogBody.function

    def counted(self: CatalogBody, index: int, limits: LimitSettings) -> Any:
        seen.append(index)
        return original(self, index, limits)

    monkeypatch.setattr(CatalogBody, "function", counted)
    return seen


CATALOG = [definition(f"f{i}", f"function number {i}") for i in range(20)]


def test_a_body_splits_into_each_definitions_bytes() -> None:
    body = cut(b'{"functions": [ {"name": "a", "description": "x"} ,{"name":"b"}], "pinned": ["b", "b"]}')

    assert [bytes(part) for part in body.parts] == [b'{"name": "a", "description": "x"}', b'{"name":"b"}']
    assert body.pinned == ("b",)
    assert len(body) == 2
    assert len(set(body.digests)) == 2


@pytest.mark.parametrize(
    "data",
    [
        b'[{"name": "a"}]',  # a bare list: decoded whole
        b'{"functions": [], "extra": 1}',
        b'{"functions": "all"}',
        b'{"functions": [{"name": "a"}], "pinned": [1]}',
        b'{"functions": [{"name": "a"}',
        b"\xff\xfe{}",
    ],
)
def test_any_other_shape_is_not_split(data: bytes) -> None:
    assert split(data, "t") is None


def test_one_changed_definition_is_the_only_one_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    known = written(CATALOG)
    changed = [*CATALOG[:7], definition("f7", "a new description"), *CATALOG[8:]]
    seen = decodes(monkeypatch)

    delta = resolve(cut(body_of(changed)), basis(known), LIMITS)

    assert delta is not None
    assert seen == [7]
    result = known.plan_delta(delta)
    assert [f.name for f in result.updated] == ["f7"]
    assert result.added == []
    assert result.removed == []
    assert result.unchanged == [f"f{i}" for i in range(20) if i != 7]


def test_the_same_definitions_in_other_bytes_are_unchanged() -> None:
    known = written(CATALOG)
    spaced = [*CATALOG[:3], {"description": "function number 3", "name": "f3"}, *CATALOG[4:]]

    delta = resolve(cut(body_of(spaced, indent=2)), basis(known), LIMITS)

    assert delta is not None
    assert len(delta.fresh) == 20
    result = known.plan_delta(delta)
    assert result.to_embed == []
    assert result.removed == []
    again = resolve(cut(body_of(spaced, indent=2)), basis(known), LIMITS)
    assert again is not None
    assert again.fresh == {}


def test_added_and_removed_definitions_follow_the_body() -> None:
    known = written(CATALOG)
    wanted = [definition("new"), *CATALOG[2:]]

    delta = resolve(cut(body_of(wanted)), basis(known), LIMITS)

    assert delta is not None
    result = known.plan_delta(delta)
    assert [f.name for f in result.added] == ["new"]
    assert result.removed == ["f0", "f1"]
    assert set(known) == {d["name"] for d in wanted}


@pytest.mark.parametrize(
    ("fresh", "pinned"),
    [
        (definition("f3", "nul \x00 inside"), None),  # a limit
        (definition("f3", "x" * 500), None),
        ({"name": "bad name"}, None),  # a bad definition
        (definition("f4"), None),  # a name twice
        (definition("f3", "deep", parameters={"a": {"b": {"c": {"d": {"e": {"f": {}}}}}}}), None),
        (definition("f3", "fine"), ["nobody"]),  # an unknown pinned name
    ],
)
def test_anything_wrong_leaves_the_body_to_the_whole_decode(fresh: dict[str, Any], pinned: list[str] | None) -> None:
    known = written(CATALOG)

    assert resolve(cut(body_of([*CATALOG[:3], fresh, *CATALOG[4:]], pinned)), basis(known), LIMITS) is None


def test_many_fresh_definitions_are_decoded_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    known = written(CATALOG)
    monkeypatch.setattr(delta_module, "FRESH_MOST", 2)
    edited = [definition(d["name"], "edited") for d in CATALOG]

    assert resolve(cut(body_of(edited[:2] + CATALOG[2:])), basis(known), LIMITS) is not None
    assert resolve(cut(body_of(edited[:3] + CATALOG[3:])), basis(known), LIMITS) is None


def test_a_delta_is_planned_only_against_the_record_it_was_resolved_against() -> None:
    known = written(CATALOG)
    delta = resolve(cut(body_of(CATALOG)), basis(known), LIMITS)
    assert delta is not None

    known.plan(cut(body_of(CATALOG)).document(LIMITS).functions)  # a list: the parts are gone

    assert known.parts is None
    with pytest.raises(ValueError, match="another record"):
        known.plan_delta(delta)


def test_definitions_by_name_are_decoded_when_read(monkeypatch: pytest.MonkeyPatch) -> None:
    known = written(CATALOG)
    delta = resolve(cut(body_of(CATALOG, pinned=["f5"])), basis(known), LIMITS)
    assert delta is not None
    assert delta.pinned == ("f5",)
    seen = decodes(monkeypatch)

    functions = delta.by_name()

    assert len(functions) == 20
    assert "f5" in functions
    assert "nobody" not in functions
    assert seen == []
    assert functions["f5"].description == "function number 5"
    assert seen == [5]


def test_a_part_is_checked_where_it_lies_in_the_body() -> None:
    with pytest.raises(InvalidRequest, match=r"functions\[3\]\.description: the text contains a NUL") as nul:
        check_document({"description": "a\x00"}, LIMITS, at=("functions", 3))
    assert nul.value.field == "functions[3].description"
    deep: dict[str, Any] = {"a": {"b": {"c": {"d": {"e": {"f": {}}}}}}}  # innermost: depth 6, or 8 in functions[0]
    check_document(deep, LIMITS)
    with pytest.raises(InvalidRequest, match=r"functions\[0\]\.a\.b\.c\.d\.e\.f: nested deeper than 8"):
        check_document(deep, LIMITS, at=("functions", 0))
    with pytest.raises(InvalidRequest, match=r"pinned\[1\]"):
        check_document(["a", "b\x00"], LIMITS, at=("pinned",))


def test_a_part_is_not_counted_as_a_body() -> None:
    check_document({"functions": list(range(20))}, LimitSettings(functions=5), at=("functions", 0))
    with pytest.raises(InvalidRequest, match="at most 5 per catalog"):
        check_document({"functions": list(range(20))}, LimitSettings(functions=5))


def test_the_split_check_names_the_count_and_the_pinned_names() -> None:
    body = cut(body_of(CATALOG, pinned=["f1", "x" * 300]))

    with pytest.raises(InvalidRequest, match=r"functions: 20 functions; at most 10 per catalog"):
        body.check(LimitSettings(functions=10))
    with pytest.raises(InvalidRequest, match=r"pinned\[1\]: the text has 300 characters"):
        body.check(LIMITS)


names = st.sampled_from([f"f{i}" for i in range(8)])
descriptions = st.sampled_from(["one", "two", "three"])
catalogs = st.lists(st.tuples(names, descriptions, st.booleans()), max_size=10, unique_by=lambda t: t[0])


def _definitions(drawn: list[tuple[str, str, bool]]) -> list[dict[str, Any]]:
    # The flag swaps key order: the same definition in other bytes.
    return [definition(n, d) if flag else {"description": d, "name": n} for n, d, flag in drawn]


@settings(max_examples=200, deadline=None)
@given(first=catalogs, second=catalogs, third=catalogs)
def test_a_delta_plans_what_a_full_plan_of_the_stored_hashes_plans(
    first: list[tuple[str, str, bool]], second: list[tuple[str, str, bool]], third: list[tuple[str, str, bool]]
) -> None:
    known = written(_definitions(first))
    for drawn in (second, third):
        body = cut(body_of(_definitions(drawn)))
        desired = parse_document(json.loads(body.body), source="t").functions
        expected = plan(desired, dict(known))
        delta = resolve(body, basis(known), LIMITS)
        assert isinstance(delta, Delta)

        result = known.plan_delta(delta)

        assert [f.name for f in result.added] == [f.name for f in expected.added]
        assert [f.name for f in result.updated] == [f.name for f in expected.updated]
        assert (result.removed, result.unchanged) == (expected.removed, expected.unchanged)
        assert dict(known) == {f.name: f.content_hash for f in desired}
