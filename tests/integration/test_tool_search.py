"""Tool search over HTTP with the real model: ``POST /v1/tool_search``, the catalog as each API's
``tools`` array, and ``defer_rest`` routes; every shape emitted is checked against the SDKs' own types."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from anthropic.types import ToolParam as AnthropicToolParam
from anthropic.types import ToolResultBlockParam, ToolUnionParam
from mcp import types as mcp_types
from openai.types.responses import ResponseInputItemParam, ToolParam

from router.api.keys import AuthSettings
from router.embedding import EmbedderPool
from tests.conftest import EXAMPLE_COUNTS, EXAMPLES, STOCKS, TIMEZONE, WEATHER, Served, run_app
from tests.sdk_types import conforms

pytestmark = pytest.mark.integration

FLIGHT = "Find me a flight from Lisbon to Rome next Friday"


@pytest.fixture(scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory, embedders: EmbedderPool) -> AsyncIterator[Served]:
    async with run_app(data=tmp_path_factory.mktemp("tool-search") / "data", pool=embedders, catalog=EXAMPLES) as app:
        response = await app.client.put(
            "/v1/catalogs/pins", json={"functions": [WEATHER, STOCKS, TIMEZONE], "pinned": ["get_local_time"]}
        )
        assert response.status_code == 200, response.text
        yield app


async def search(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await client.post("/v1/tool_search", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def tool_list(client: httpx.AsyncClient, namespace: str, **params: Any) -> httpx.Response:
    response = await client.get(f"/v1/catalogs/{namespace}/tools", params=params)
    assert response.status_code == 200, response.text
    return response


def error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    return str(response.json()["detail"])


async def test_an_openai_search_call_is_answered_with_a_tool_search_output(served: Served) -> None:
    answer = await search(served.client, namespace="travel", query=FLIGHT, format="openai", call_id="call_7")
    item = conforms(ResponseInputItemParam, answer["item"])
    assert (item["type"], item["execution"], item["status"], item["call_id"]) == (
        "tool_search_output",
        "client",
        "completed",
        "call_7",
    )
    names = [f["name"] for f in answer["functions"]]
    assert names[0] == "search_flights"
    assert len(names) == 3
    assert [t["name"] for t in item["tools"]] == names
    scores = [f["score"] for f in answer["functions"]]
    assert scores == sorted(scores, reverse=True)
    assert {f["namespace"] for f in answer["functions"]} == {"travel"}
    # The loaded tools are the definitions the tool list defers, byte for byte.
    listed = {t.get("name"): t for t in (await tool_list(served.client, "travel")).json()["tools"]}
    assert all(tool == listed[tool["name"]] for tool in item["tools"])
    assert all(tool["defer_loading"] is True for tool in item["tools"])


async def test_an_anthropic_search_call_is_answered_with_tool_references(served: Served) -> None:
    missing = await served.client.post(
        "/v1/tool_search", json={"namespace": "travel", "query": FLIGHT, "format": "anthropic"}
    )
    assert error(missing, 422).startswith("call_id")
    answer = await search(
        served.client,
        namespace="travel",
        query="Book a hotel in Rome",
        format="anthropic",
        call_id="toolu_1",
        max_functions=2,
    )
    item = conforms(ToolResultBlockParam, answer["item"])
    assert item["tool_use_id"] == "toolu_1"
    assert [block["type"] for block in item["content"]] == ["tool_reference", "tool_reference"]
    assert [block["tool_name"] for block in item["content"]] == [f["name"] for f in answer["functions"]]
    assert "search_hotels" in [f["name"] for f in answer["functions"]]


async def test_a_function_named_as_the_search_tool_is_never_referenced(served: Served) -> None:
    searcher = {"name": "tool_search", "description": "Search the web for pages about a topic.", "parameters": {}}
    assert (await served.client.put("/v1/catalogs/web", json={"functions": [searcher, WEATHER]})).status_code == 200
    body = {"namespace": "web", "query": "search the web", "max_functions": 2}
    answer = await search(served.client, **body, format="anthropic", call_id="toolu_2")
    assert [block["tool_name"] for block in answer["item"]["content"]] == ["get_weather"]
    assert answer["left_out"] == [{"name": "tool_search", "reason": "the search tool is named 'tool_search'"}]
    # OpenAI's search tool is a type of its own, not a name: there the function is found.
    assert "tool_search" in [f["name"] for f in (await search(served.client, **body, format="openai"))["functions"]]


async def test_the_search_reaches_past_names_the_api_refuses(served: Served) -> None:
    # MCP tools are often named with dots, which OpenAI and Anthropic refuse: they took the places of the others.
    dotted = [
        {"name": f"weather.{kind}", "description": f"Weather {kind} for a city.", "parameters": {}}
        for kind in ("now", "forecast", "alerts")
    ]
    climate = {"name": "get_climate", "description": "Climate averages and weather statistics for a city."}
    mail = {"name": "send_mail", "description": "Send an email to someone."}
    catalog = {"functions": [*dotted, climate, mail]}
    assert (await served.client.put("/v1/catalogs/dotted", json=catalog)).status_code == 200
    for format, call_id in (("openai", None), ("anthropic", "toolu_3")):
        body = {"namespace": "dotted", "query": "What is the weather in Oslo?", "max_functions": 2, "format": format}
        answer = await search(served.client, **body, call_id=call_id)
        assert [f["name"] for f in answer["functions"]] == ["get_climate", "send_mail"]
        assert {f["name"] for f in answer["left_out"]} == {"weather.now", "weather.forecast", "weather.alerts"}


async def test_mcp_and_plain_answers(served: Served) -> None:
    answer = await search(served.client, namespace="travel", query="How much is 100 euros in dollars?", format="mcp")
    listed = mcp_types.ListToolsResult.model_validate(answer["item"])
    assert listed.tools[0].name == "convert_currency"
    assert listed.tools[0].input_schema["type"] == "object"
    plain = await search(served.client, namespace="travel", query="How much is 100 euros in dollars?", format="plain")
    assert plain["item"]["functions"][0]["name"] == "convert_currency"
    assert set(plain["item"]["functions"][0]) == {"name", "description", "parameters"}


async def test_namespaces_are_searched_together_and_pinned_functions_never_come_back(served: Served) -> None:
    answer = await search(
        served.client, namespace=["travel", "commerce"], query="I want a refund for my order", max_functions=4
    )
    found = [(f["namespace"], f["name"]) for f in answer["functions"]]
    assert len(found) == 4
    assert found[0][0] == "commerce"
    assert [f["score"] for f in answer["functions"]] == sorted((f["score"] for f in answer["functions"]), reverse=True)
    pins = await search(served.client, namespace="pins", query="What time is it in Tokyo?", max_functions=3)
    assert "get_local_time" not in [f["name"] for f in pins["functions"]]
    assert len(pins["functions"]) == 2


async def test_a_session_gives_the_search_its_context(served: Served) -> None:
    messages = [
        {"role": "user", "content": "Find me flights from Lisbon to Rome on Friday"},
        {"role": "assistant", "content": "TP 840 and AZ 201 fly on Friday."},
    ]
    stored = await served.client.post(
        "/v1/sessions/trip-1/messages", json={"messages": messages, "namespace": "travel"}
    )
    assert stored.status_code == 200, stored.text
    query = "Book the first one for John"
    alone = await search(served.client, namespace="travel", query=query)
    followed = await search(served.client, namespace="travel", query=query, session_id="trip-1")
    assert followed["functions"] != alone["functions"]
    # The search is the route's: the same functions and scores as a route of the query in the session.
    turn = {"namespace": "travel", "session_id": "trip-1", "messages": [{"role": "user", "content": query}]}
    routed = (await served.client.post("/v1/route", json=turn)).json()["functions"]
    assert [(f["name"], f["score"]) for f in followed["functions"]] == [(f["name"], f["score"]) for f in routed]


async def test_bad_searches_are_refused_naming_the_field(served: Served) -> None:
    client = served.client
    body = {"namespace": "travel", "query": FLIGHT}
    assert "nowhere" in error(await client.post("/v1/tool_search", json={**body, "namespace": "nowhere"}), 404)
    assert "namespace[1]" in error(
        await client.post("/v1/tool_search", json={**body, "namespace": ["travel", "x y"]}), 422
    )
    assert "namespace" in error(await client.post("/v1/tool_search", json={**body, "namespace": []}), 422)
    # A namespace that is no name is refused as a route refuses it: the same kind and words.
    searched = await client.post("/v1/tool_search", json={**body, "namespace": "a/b"})
    routed = await client.post(
        "/v1/route", json={"namespace": "a/b", "messages": [{"role": "user", "content": FLIGHT}]}
    )
    assert searched.status_code == routed.status_code == 422
    assert searched.json()["error"] == routed.json()["error"] == "ValidationError"
    assert searched.json()["detail"] == routed.json()["detail"]
    assert "query" in error(await client.post("/v1/tool_search", json={**body, "query": ""}), 422)
    blank = await client.post("/v1/tool_search", json={**body, "query": "  \n "})
    assert error(blank, 422) == "query: Value error, holds no text"
    assert "format" in error(await client.post("/v1/tool_search", json={**body, "format": "gemini"}), 422)
    assert "max_functions" in error(await client.post("/v1/tool_search", json={**body, "max_functions": 0}), 422)


async def test_searches_count_as_routes_in_the_metrics(served: Served) -> None:
    def count(text: str, endpoint: str) -> float:
        prefix = f'router_routes_total{{endpoint="{endpoint}"}}'
        line = next((row for row in text.splitlines() if row.startswith(prefix)), None)
        return float(line.split()[-1]) if line else 0.0

    before = (await served.client.get("/metrics")).text
    await search(served.client, namespace="travel", query=FLIGHT)
    await served.client.post(
        "/v1/route", json={"namespace": "travel", "messages": [{"role": "user", "content": FLIGHT}]}
    )
    after = (await served.client.get("/metrics")).text
    assert count(after, "tool_search") == count(before, "tool_search") + 1
    assert count(after, "route") == count(before, "route") + 1
    assert 'router_http_request_duration_seconds_count{method="POST",path="/v1/tool_search",status="200"}' in after


async def test_the_catalog_as_an_openai_tool_list(served: Served) -> None:
    first = await tool_list(served.client, "travel", format="openai")
    again = await tool_list(served.client, "travel", format="openai")
    assert first.content == again.content
    assert first.headers["etag"] == again.headers["etag"]
    for held in (first.headers["etag"], f'"other", W/{first.headers["etag"]}', "*"):
        unchanged = await served.client.get("/v1/catalogs/travel/tools", headers={"if-none-match": held})
        assert unchanged.status_code == 304, held
    changed = await served.client.get("/v1/catalogs/travel/tools", headers={"if-none-match": '"other"'})
    assert changed.status_code == 200
    tools = first.json()["tools"]
    for tool in tools:
        conforms(ToolParam, tool)
    search_tool = tools[0]
    assert (search_tool["type"], search_tool["execution"]) == ("tool_search", "client")
    assert "'travel'" in search_tool["description"]
    assert "15 functions" in search_tool["description"]
    for topic in ("flight", "hotel", "booking"):
        assert topic in search_tool["description"]
    functions = tools[1:]
    assert len(functions) == EXAMPLE_COUNTS["travel"]
    assert all(t["defer_loading"] is True for t in functions)
    assert [t["name"] for t in functions] == sorted(t["name"] for t in functions)
    loaded = (await tool_list(served.client, "travel", load=["book_flight", "get_booking"])).json()["tools"]
    assert [t.get("name") for t in loaded[1:3]] == ["book_flight", "get_booking"]
    assert all("defer_loading" not in t for t in loaded[1:3])
    assert loaded[0] == search_tool


async def test_the_catalog_as_an_anthropic_tool_list_loads_the_pinned(served: Served) -> None:
    tools = (await tool_list(served.client, "pins", format="anthropic")).json()["tools"]
    for tool in tools:
        conforms(ToolUnionParam, tool)
    assert [(t["name"], t.get("defer_loading", False)) for t in tools] == [
        ("tool_search", False),
        ("get_local_time", False),
        ("get_stock_price", True),
        ("get_weather", True),
    ]
    assert tools[0]["input_schema"]["required"] == ["query"]
    assert "3 functions" in tools[0]["description"]
    assert "stock" in tools[0]["description"]


async def test_bad_tool_list_requests(served: Served) -> None:
    client = served.client
    assert "nowhere" in error(await client.get("/v1/catalogs/nowhere/tools"), 404)
    assert "format" in error(await client.get("/v1/catalogs/travel/tools", params={"format": "mcp"}), 422)
    assert "load[1]" in error(
        await client.get("/v1/catalogs/travel/tools", params={"load": ["book_flight", "nope"]}), 422
    )


async def test_a_route_with_defer_rest_loads_the_routed_and_defers_the_rest(served: Served) -> None:
    body = {"namespace": "travel", "messages": [{"role": "user", "content": FLIGHT}], "defer_rest": True}
    response = await served.client.post("/v1/route", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    routed = [f["name"] for f in answer["functions"]]
    tools = answer["tools"]
    for tool in tools:
        conforms(ToolParam, tool)
    assert tools[0]["type"] == "tool_search"
    assert [t["name"] for t in tools[1:4]] == routed
    assert all("defer_loading" not in t for t in tools[1:4])
    assert all(t["defer_loading"] is True for t in tools[4:])
    assert len(tools) == EXAMPLE_COUNTS["travel"] + 1
    anthropic = await served.client.post("/v1/route", json={**body, "format": "anthropic"})
    assert anthropic.status_code == 200, anthropic.text
    for tool in anthropic.json()["tools"]:
        conforms(ToolUnionParam, tool)
    assert [t["name"] for t in anthropic.json()["tools"][1:4]] == routed
    chat = await served.client.post("/v1/route", json={**body, "defer_rest": False})
    assert [t["function"]["name"] for t in chat.json()["tools"]] == routed
    plain = await served.client.post("/v1/route", json={**body, "defer_rest": False, "format": "anthropic"})
    for tool in plain.json()["tools"]:
        conforms(AnthropicToolParam, tool)
    assert [t["name"] for t in plain.json()["tools"]] == routed
    assert all("input_schema" in t and "defer_loading" not in t for t in plain.json()["tools"])


async def test_a_key_limited_to_namespaces_may_search_only_those(serve: Callable[..., Any]) -> None:
    keys = {"travel-key-0123456789abcdef": ["travel"]}
    async with serve(catalog=EXAMPLES, auth=AuthSettings(api_keys=json.dumps(keys))) as app:
        headers = {"authorization": "Bearer travel-key-0123456789abcdef"}
        allowed = await app.client.post(
            "/v1/tool_search", json={"namespace": "travel", "query": FLIGHT}, headers=headers
        )
        assert allowed.status_code == 200, allowed.text
        both = {"namespace": ["travel", "devops"], "query": FLIGHT}
        assert "devops" in error(await app.client.post("/v1/tool_search", json=both, headers=headers), 403)
        listed = await app.client.get("/v1/catalogs/devops/tools", headers=headers)
        assert error(listed, 403)
        assert (await app.client.post("/v1/tool_search", json=both)).status_code == 401


async def test_the_openapi_document_describes_the_tool_search_endpoints(served: Served) -> None:
    document = (await served.client.get("/openapi.json")).json()
    search = document["paths"]["/v1/tool_search"]["post"]
    listing = document["paths"]["/v1/catalogs/{namespace}/tools"]["get"]
    assert {"403", "404", "422"} <= set(search["responses"]) & set(listing["responses"])
    schemas = document["components"]["schemas"]
    assert schemas["ToolSearchIn"]["examples"][0]["format"] == "openai"
    assert schemas["ToolSearchOut"]["examples"][0]["item"]["type"] == "tool_search_output"
    assert schemas["CatalogToolsOut"]["examples"][0]["tools"][0]["name"] == "tool_search"
    listed = listing["responses"]["200"]["content"]["application/json"]["schema"]
    assert listed["$ref"].endswith("/CatalogToolsOut")
    assert {p["name"] for p in listing["parameters"]} >= {"namespace", "format", "load"}
    assert "defer_rest" in schemas["RouteIn"]["properties"]
    one, several = schemas["ToolSearchIn"]["properties"]["namespace"]["anyOf"]
    pattern = schemas["RouteIn"]["properties"]["namespace"]["pattern"]
    assert one["pattern"] == several["items"]["pattern"] == pattern
    assert (several["minItems"], several["maxItems"]) == (1, 16)
