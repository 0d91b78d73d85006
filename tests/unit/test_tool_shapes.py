"""The catalog in the model APIs' shapes: pure functions of definitions, checked against the SDKs' types."""

from __future__ import annotations

import json

import pytest
from anthropic.types import ToolResultBlockParam, ToolUnionParam
from mcp import types as mcp_types
from openai.types.chat import ChatCompletionToolParam
from openai.types.responses import ResponseInputItemParam, ToolParam

from router.api.route import chat_tools
from router.catalog.functions import FunctionDef, parse_function
from router.common.errors import InvalidRequest
from router.tools import ListFormat, catalog_tools, search_description, search_item, topics
from tests.sdk_types import conforms

FUNCTIONS = [
    parse_function(raw, where=f"functions[{i}]")
    for i, raw in enumerate([
        {"type": "function", "function": {"name": "search_flights", "description": "Search flights.", "strict": True,
                                          "parameters": {"type": "object", "properties": {"to": {"type": "string"}},
                                                         "required": ["to"], "additionalProperties": False}}},
        {"name": "book_flight", "description": "Book a flight.", "parameters": {"type": "object", "properties": {}}},
        {"name": "get_hotel_details", "description": "A hotel.",
         "inputSchema": {"properties": {"id": {"type": "string"}}}},
        {"name": "cancelHotelBooking"},
    ])
]  # fmt: skip


def test_topics_are_what_the_names_act_on_most_common_first() -> None:
    assert topics(FUNCTIONS) == ["flight", "hotel", "book", "booking"]
    assert topics(FUNCTIONS, limit=2) == ["flight", "hotel"]


def test_the_description_says_what_the_catalog_holds() -> None:
    text = search_description("travel", FUNCTIONS)
    assert "'travel'" in text
    assert "4 functions about: flight, hotel, book, booking." in text
    assert "no functions" in search_description("empty", [])
    assert "1 function " in search_description("one", FUNCTIONS[:1])


@pytest.mark.parametrize(("format", "kind"), [("openai", ToolParam), ("anthropic", ToolUnionParam)])
def test_a_tool_list_is_stable_and_valid(format: str, kind: object) -> None:
    tools = catalog_tools(format, "travel", FUNCTIONS, loaded=["get_hotel_details"]).tools  # type: ignore[arg-type]
    shuffled = catalog_tools(format, "travel", FUNCTIONS[::-1], loaded=["get_hotel_details"]).tools  # type: ignore[arg-type]
    assert json.dumps(tools) == json.dumps(shuffled)
    for tool in tools:
        conforms(kind, tool)
    names = [t.get("name") for t in tools]
    assert names[1:] == ["get_hotel_details", "book_flight", "cancelHotelBooking", "search_flights"]
    assert [bool(t.get("defer_loading")) for t in tools] == [False, False, True, True, True]


def test_openai_function_tools_keep_strict_and_the_schema() -> None:
    tools = catalog_tools("openai", "travel", FUNCTIONS).tools
    flights = next(t for t in tools if t.get("name") == "search_flights")
    assert flights["strict"] is True
    assert flights["parameters"]["additionalProperties"] is False
    bare = next(t for t in tools if t.get("name") == "cancelHotelBooking")
    assert (bare["strict"], bare["parameters"], "description" in bare) == (
        False,
        {"type": "object", "properties": {}},
        False,
    )
    hotel = next(t for t in tools if t.get("name") == "get_hotel_details")
    assert hotel["parameters"] == {"type": "object", "properties": {"id": {"type": "string"}}}


def test_search_items_in_every_format() -> None:
    found = FUNCTIONS[:2]
    openai = conforms(ResponseInputItemParam, search_item("openai", found, call_id="call_1"))
    assert [t["name"] for t in openai["tools"]] == ["search_flights", "book_flight"]
    assert "call_id" not in search_item("openai", found, call_id=None)
    anthropic = conforms(ToolResultBlockParam, search_item("anthropic", found, call_id="toolu_1"))
    assert anthropic["content"] == [
        {"type": "tool_reference", "tool_name": "search_flights"},
        {"type": "tool_reference", "tool_name": "book_flight"},
    ]
    nothing = conforms(ToolResultBlockParam, search_item("anthropic", [], call_id="toolu_2"))
    assert nothing["content"][0]["type"] == "text"
    with pytest.raises(InvalidRequest, match="call_id"):
        search_item("anthropic", found, call_id=None)
    listed = mcp_types.ListToolsResult.model_validate(search_item("mcp", found, call_id=None))
    assert [t.name for t in listed.tools] == ["search_flights", "book_flight"]
    plain = search_item("plain", found, call_id=None)
    assert plain["functions"][1] == {
        "name": "book_flight",
        "description": "Book a flight.",
        "parameters": {"type": "object", "properties": {}},
    }


def test_a_shape_the_sdk_does_not_know_is_caught() -> None:
    tool = catalog_tools("openai", "travel", FUNCTIONS).tools[1]
    with pytest.raises(AssertionError, match="not a"):
        conforms(ToolParam, {**tool, "defer": True})
    with pytest.raises(ValueError, match="tool_reference"):
        conforms(ToolResultBlockParam, {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "tool_ref"}]})


def many(count: int) -> list[FunctionDef]:
    return [parse_function({"name": f"f{i:05d}"}, where=f"functions[{i}]") for i in range(count)]


DOTTED = parse_function({"name": "files.read", "description": "Read a file."}, where="functions[4]")


@pytest.mark.parametrize(("format", "kind"), [("openai", ToolParam), ("anthropic", ToolUnionParam)])
def test_a_name_the_api_refuses_is_left_out_and_named(format: ListFormat, kind: object) -> None:
    listed = catalog_tools(format, "travel", [*FUNCTIONS, DOTTED], loaded=["files.read"])
    assert "files.read" not in [t.get("name") for t in listed.tools]
    assert len(listed.tools) == 1 + len(FUNCTIONS)
    for tool in listed.tools:
        conforms(kind, tool)
    assert [f.name for f in listed.left_out] == ["files.read"]
    assert "^[a-zA-Z0-9_-]{1,64}$" in listed.left_out[0].reason
    # MCP takes dots.
    assert search_item("mcp", [DOTTED], call_id=None)["tools"][0]["name"] == "files.read"


def test_a_function_named_as_the_search_tool_is_left_out_of_an_anthropic_list() -> None:
    twin = parse_function({"name": "tool_search", "description": "Search the web."}, where="functions[4]")

    listed = catalog_tools("anthropic", "travel", [*FUNCTIONS, twin])

    assert [t["name"] for t in listed.tools].count("tool_search") == 1
    assert [(f.name, f.reason) for f in listed.left_out] == [("tool_search", "the search tool is named 'tool_search'")]
    assert "tool_search" in [t["name"] for t in catalog_tools("openai", "travel", [*FUNCTIONS, twin]).tools[1:]]


def test_anthropic_lists_keep_the_loaded_then_the_first_ten_thousand_deferred() -> None:
    functions = many(10_002)
    listed = catalog_tools("anthropic", "big", functions, loaded=["f10001"])
    names = [t["name"] for t in listed.tools]
    assert names[:3] == ["tool_search", "f10001", "f00000"]
    assert sum(bool(t.get("defer_loading")) for t in listed.tools) == 10_000
    assert [f.name for f in listed.left_out] == ["f10000"]
    assert "10,000" in listed.left_out[0].reason
    within = catalog_tools("anthropic", "big", functions[:10_000])
    assert (len(within.tools), within.left_out) == (10_001, [])
    assert catalog_tools("openai", "big", functions).left_out == []  # OpenAI documents no such limit


def test_chat_completions_tools_keep_to_128_pinned_first() -> None:
    functions = many(130)
    listed = chat_tools([DOTTED, *functions])
    assert [t["function"]["name"] for t in listed.tools] == [f.name for f in functions[:128]]
    for tool in listed.tools:
        conforms(ChatCompletionToolParam, tool)
    assert [f.name for f in listed.left_out] == ["files.read", "f00128", "f00129"]
    assert "at most 128" in listed.left_out[-1].reason
