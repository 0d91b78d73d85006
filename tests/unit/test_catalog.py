"""Function definitions: the three shapes, validation, hashes, point ids and embedding texts."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from router.catalog.functions import (
    FunctionDef,
    function_from_payload,
    parse_catalog,
    parse_function,
    point_id,
    validate_namespace,
)
from router.common.errors import CatalogInvalid
from router.retrieval.texts import DEFAULT_TEMPLATE, TEMPLATES, name_description, name_description_parameters, template

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "units": {"type": "string", "enum": ["metric", "imperial"]},
    },
    "required": ["city"],
}
OPENAI = {
    "type": "function",
    "function": {"name": "get_weather", "description": "Current weather.", "parameters": SCHEMA, "strict": True},
}
BARE = {"name": "get_weather", "description": "Current weather.", "parameters": SCHEMA}
MCP = {
    "name": "get_weather",
    "title": "Weather",
    "description": "Current weather.",
    "inputSchema": SCHEMA,
    "annotations": {"readOnlyHint": True},
}


# OpenAI's Responses API lists function tools flat, as GET /v1/catalogs/{namespace}/tools answers them.
RESPONSES = {"type": "function", "name": "get_weather", "description": "Current weather.", "parameters": SCHEMA}


# Anthropic's custom tool, as GET /v1/catalogs/{namespace}/tools?format=anthropic lists it.
ANTHROPIC = {"name": "get_weather", "description": "Current weather.", "input_schema": SCHEMA, "type": "custom"}


@pytest.mark.parametrize(
    ("raw", "shape"),
    [(OPENAI, "openai"), (BARE, "bare"), (MCP, "mcp"), (RESPONSES, "bare"), (ANTHROPIC, "bare")],
)
def test_three_shapes_parse_to_the_same_function(raw: dict[str, Any], shape: str) -> None:
    function = parse_function(raw, where="t")

    assert function.shape == shape
    assert function.name == "get_weather"
    assert function.description == "Current weather."
    assert function.parameters == SCHEMA
    assert function.definition == raw


@pytest.mark.parametrize("raw", [OPENAI, BARE, MCP, RESPONSES, ANTHROPIC])
def test_definition_is_kept_verbatim_including_unknown_keys(raw: dict[str, Any]) -> None:
    original = copy.deepcopy(raw)

    function = parse_function(raw, where="t")

    assert function.definition == original
    assert raw == original


def test_openai_tool_is_the_definition_itself_for_openai_shape() -> None:
    assert parse_function(OPENAI, where="t").openai_tool() == OPENAI


@pytest.mark.parametrize("raw", [BARE, MCP, RESPONSES, ANTHROPIC])
def test_openai_tool_wraps_bare_and_mcp_definitions(raw: dict[str, Any]) -> None:
    tool = parse_function(raw, where="t").openai_tool()

    assert tool == {
        "type": "function",
        "function": {"name": "get_weather", "description": "Current weather.", "parameters": SCHEMA},
    }


def test_openai_tool_omits_a_description_that_was_never_given() -> None:
    tool = parse_function({"name": "ping"}, where="t").openai_tool()

    assert tool == {
        "type": "function",
        "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}},
    }


def test_missing_description_and_parameters_get_defaults() -> None:
    function = parse_function({"name": "ping", "description": None}, where="t")

    assert function.description == ""
    assert function.parameters == {"type": "object", "properties": {}}


@pytest.mark.parametrize("name", ["a", "x" * 64, "get.weather-v2_X9", "0", "-_.-"])
def test_accepted_names(name: str) -> None:
    assert parse_function({"name": name}, where="t").name == name


def bad(raw: Any, *, where: str = "cat.json: functions[2]") -> CatalogInvalid:
    with pytest.raises(CatalogInvalid) as caught:
        parse_function(raw, where=where)
    return caught.value


@pytest.mark.parametrize(
    "name",
    [None, "", "x" * 65, "has space", "semi;colon", "slash/name", "ünïcode", 42, ["a"]],
    ids=["missing", "empty", "too-long", "space", "semicolon", "slash", "unicode", "int", "list"],
)
@pytest.mark.parametrize(
    ("wrap", "field"),
    [
        (lambda n: {"name": n}, "functions[2].name"),
        (lambda n: {"type": "function", "function": {"name": n}}, "functions[2].function.name"),
        (lambda n: {"name": n, "inputSchema": {"type": "object"}}, "functions[2].name"),
    ],
    ids=["bare", "openai", "mcp"],
)
def test_bad_names_are_rejected_naming_where_and_field(name: Any, wrap: Any, field: str) -> None:
    raw = wrap(name)
    if name is None:
        body = raw.get("function", raw)
        del body["name"]

    error = bad(raw)

    assert error.field == f"cat.json: {field}"
    assert error.detail.startswith(f"cat.json: {field}:")
    assert error.status_code == 422


@pytest.mark.parametrize("name", ["get_weather\n", "travel\n"])
def test_a_trailing_newline_is_not_a_valid_name(name: str) -> None:
    with pytest.raises(CatalogInvalid):
        parse_function({"name": name}, where="t")


def test_a_trailing_newline_is_not_a_valid_namespace() -> None:
    with pytest.raises(CatalogInvalid):
        validate_namespace("travel\n")


@pytest.mark.parametrize("description", [42, 1.5, True, ["a"], {"text": "a"}])
def test_description_must_be_a_string(description: Any) -> None:
    error = bad({"name": "ok", "description": description})

    assert error.field == "cat.json: functions[2].description"
    assert type(description).__name__ in error.detail


@pytest.mark.parametrize(
    ("parameters", "field"),
    [
        ("a string", "parameters"),
        (["type", "object"], "parameters"),
        (None, "parameters"),
        ({"type": "array", "items": {"type": "string"}}, "parameters.type"),
        ({"type": "string"}, "parameters.type"),
        ({"type": "object", "properties": ["city"]}, "parameters.properties"),
        ({"type": "object", "properties": {"city": "string"}}, "parameters.properties"),
        ({"type": "object", "properties": {}, "required": "city"}, "parameters.required"),
        ({"type": "object", "properties": {}, "required": [1]}, "parameters.required"),
    ],
)
def test_parameters_must_be_a_json_schema_object(parameters: Any, field: str) -> None:
    error = bad({"name": "ok", "parameters": parameters})

    assert error.field == f"cat.json: functions[2].{field}"
    assert error.detail.startswith(f"cat.json: functions[2].{field}:")


def test_mcp_input_schema_and_openai_parameters_are_named_as_written() -> None:
    mcp = bad({"name": "ok", "inputSchema": "nope"})
    openai = bad({"type": "function", "function": {"name": "ok", "parameters": "nope"}})

    assert mcp.field == "cat.json: functions[2].inputSchema"
    assert openai.field == "cat.json: functions[2].function.parameters"


@pytest.mark.parametrize("raw", ["get_weather", 42, None, ["name"]])
def test_a_definition_must_be_an_object(raw: Any) -> None:
    error = bad(raw)

    assert error.field == "cat.json: functions[2]"
    assert type(raw).__name__ in error.detail


def test_the_flat_shape_keeps_strict_in_the_openai_tool() -> None:
    tool = parse_function({**RESPONSES, "strict": True}, where="t").openai_tool()

    assert tool["function"]["strict"] is True


@pytest.mark.parametrize("kind", ["tool_search", "web_search"])
def test_a_tool_that_is_no_function_is_named_as_such(kind: str) -> None:
    error = bad({"type": kind, "description": "Search the catalog."})

    assert error.field == "cat.json: functions[2].type"
    assert error.detail.endswith(f"a {kind!r} tool is not a function; leave it out")


@pytest.mark.parametrize("body", [None, "get_weather", ["get_weather"]])
def test_openai_shape_needs_a_function_object(body: Any) -> None:
    error = bad({"type": "function", "function": body})

    assert error.field == "cat.json: functions[2].function"


def test_parse_catalog_accepts_a_list_or_a_functions_object() -> None:
    as_list = parse_catalog([OPENAI, {"name": "ping"}], source="a.json")
    as_object = parse_catalog({"functions": [OPENAI, {"name": "ping"}]}, source="a.json")

    assert [f.name for f in as_list] == ["get_weather", "ping"]
    assert as_list == as_object
    assert parse_catalog([], source="a.json") == []
    assert parse_catalog({"functions": []}, source="a.json") == []


def test_parse_catalog_names_the_source_and_index_of_a_bad_function() -> None:
    functions = [BARE, {"name": "ping"}, {"name": "ok", "description": 3}]

    with pytest.raises(CatalogInvalid) as from_object:
        parse_catalog({"functions": functions}, source="/cat/travel.json")
    with pytest.raises(CatalogInvalid) as from_list:
        parse_catalog(functions, source="/cat/travel.json")

    assert from_object.value.detail.startswith("/cat/travel.json: functions[2].description: must be a string")
    assert from_list.value.detail.startswith("/cat/travel.json: [2].description: must be a string")


def test_duplicate_names_are_rejected_naming_both_indexes() -> None:
    functions = [{"name": "a"}, {"name": "b"}, {"type": "function", "function": {"name": "a"}}]

    with pytest.raises(CatalogInvalid) as caught:
        parse_catalog({"functions": functions}, source="x.yaml")

    assert caught.value.field == "x.yaml: functions[2].name"
    assert "duplicate name 'a'" in caught.value.detail
    assert "first at index 0" in caught.value.detail


@pytest.mark.parametrize(
    "document",
    [None, "functions", 42, {"functions": "a"}, {"functions": None}, {}, {"functions": {"name": "a"}}],
)
def test_a_catalog_must_be_a_list_of_functions(document: Any) -> None:
    with pytest.raises(CatalogInvalid, match=r"^x\.json: must be a list of functions"):
        parse_catalog(document, source="x.json")


def test_a_catalog_object_with_other_keys_is_rejected() -> None:
    with pytest.raises(CatalogInvalid, match=r"unexpected keys \['tools'\]"):
        parse_catalog({"functions": [], "tools": []}, source="x.json")


@pytest.mark.parametrize(
    ("pinned", "message"),
    [
        ("get_weather", "pinned: must be a list of function names"),
        ([{}], "pinned[0]: must be a function name, got dict"),
        (["get_weather", ["a"]], "pinned[1]: must be a function name, got list"),
        (["get_time"], "pinned[0]: no function named 'get_time'"),
    ],
)
def test_pinned_must_name_functions_of_the_catalog(pinned: Any, message: str) -> None:
    with pytest.raises(CatalogInvalid) as caught:
        parse_catalog({"functions": [OPENAI], "pinned": pinned}, source="x.json")

    assert caught.value.detail == f"x.json: {message}"


def test_content_hash_ignores_key_order_but_sees_every_change() -> None:
    base = parse_function(BARE, where="t")
    reordered = parse_function(dict(reversed(list(BARE.items()))), where="t")
    renamed_param = copy.deepcopy(BARE)
    renamed_param["parameters"]["properties"]["city"]["description"] = "Town name"
    redescribed = {**BARE, "description": "Weather now."}

    assert base.content_hash == reordered.content_hash
    assert len(base.content_hash) == 64
    assert parse_function(renamed_param, where="t").content_hash != base.content_hash
    assert parse_function(redescribed, where="t").content_hash != base.content_hash


def test_the_same_function_in_another_shape_hashes_differently() -> None:
    # The hash covers the verbatim definition, so a reshaped definition is re-stored as registered.
    hashes = {parse_function(raw, where="t").content_hash for raw in (OPENAI, BARE, MCP)}

    assert len(hashes) == 3


def test_point_ids_are_stable_and_distinct_per_namespace_and_name() -> None:
    assert point_id("travel", "book") == point_id("travel", "book")
    assert len({point_id("travel", "book"), point_id("travel", "cancel"), point_id("hotels", "book")}) == 3
    # The separator keeps ("ab", "c") and ("a", "bc") apart.
    assert point_id("ab", "c") != point_id("a", "bc")


def test_function_round_trips_through_a_payload() -> None:
    function = parse_function(MCP, where="t")

    restored = function_from_payload({"name": "get_weather", "definition": dict(function.definition)})

    assert restored == function
    assert restored.shape == "mcp"


@pytest.mark.parametrize("namespace", ["travel", "a", "x" * 64, "team-a.prod_2"])
def test_valid_namespaces(namespace: str) -> None:
    assert validate_namespace(namespace) == namespace


@pytest.mark.parametrize("namespace", ["", "x" * 65, "has space", "a/b", "ü"])
def test_invalid_namespaces_name_the_source(namespace: str) -> None:
    with pytest.raises(CatalogInvalid, match=r"^/cat/file\.json: namespace") as caught:
        validate_namespace(namespace, source="/cat/file.json")

    assert caught.value.field == "namespace"


def function(**raw: Any) -> FunctionDef:
    return parse_function(raw, where="t")


def test_name_description_text() -> None:
    assert name_description(function(name="get_weather", description="Current weather.")) == (
        "get_weather: Current weather."
    )
    assert name_description(function(name="ping")) == "ping"


def test_name_description_parameters_text() -> None:
    described = function(name="get_weather", description="Current weather", parameters=SCHEMA)
    bare_params = function(name="ping", parameters={"type": "object", "properties": {"host": {"type": "string"}}})

    assert name_description_parameters(described) == "get_weather: Current weather. Parameters: city (City name), units"
    assert name_description_parameters(bare_params) == "ping. Parameters: host"
    assert name_description_parameters(function(name="ping")) == "ping"


def test_name_description_parameters_does_not_double_the_full_stop() -> None:
    described = function(name="get_weather", description="Current weather.", parameters=SCHEMA)

    assert name_description_parameters(described) == "get_weather: Current weather. Parameters: city (City name), units"


def test_templates_by_name() -> None:
    assert template("name_description") is name_description
    assert template("name_description_parameters") is name_description_parameters
    assert template(DEFAULT_TEMPLATE) is TEMPLATES[DEFAULT_TEMPLATE]
    with pytest.raises(ValueError, match="unknown function text template 'raw'"):
        template("raw")
