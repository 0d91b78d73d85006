"""The HTTP API in-process: catalogs, routing, health and the error contract."""

from __future__ import annotations

import asyncio
import copy
import re
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import (
    EXAMPLE_COUNTS,
    EXAMPLES,
    ROOT,
    STOCKS,
    TIMEZONE,
    WEATHER,
    CountingEmbedder,
    Served,
    run_app,
    write_catalog,
)

from router.embedding import EmbedderPool

pytestmark = pytest.mark.integration

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "City name"}},
    "required": ["city"],
}
OPENAI = {
    "type": "function",
    "function": {
        "name": "get_forecast",
        "description": "Weather forecast for the next days in a city.",
        "parameters": SCHEMA,
        "strict": True,
    },
}
BARE = {"name": "book_table", "description": "Reserve a table at a restaurant.", "parameters": SCHEMA}
MCP = {
    "name": "find_museum",
    "title": "Museums",
    "description": "Find museums and exhibitions in a city.",
    "inputSchema": SCHEMA,
    "annotations": {"readOnlyHint": True},
}
SHAPES = [OPENAI, BARE, MCP]


@pytest.fixture(scope="module")
async def examples(tmp_path_factory: pytest.TempPathFactory, embedders: EmbedderPool) -> AsyncIterator[Served]:
    """One read-only app serving the example catalog for the routing tests of this module."""
    data = tmp_path_factory.mktemp("examples") / "data"
    async with run_app(data=data, pool=embedders, catalog=EXAMPLES) as served:
        yield served


@pytest.fixture
async def client(serve: Callable[..., Any]) -> AsyncIterator[httpx.AsyncClient]:
    """A client of an app with no catalog yet."""
    async with serve() as served:
        yield served.client


async def route_answer(client: httpx.AsyncClient, namespace: str) -> dict[str, Any]:
    body = {"namespace": namespace, "messages": user("Will it rain in Porto tomorrow?")}
    response = await client.post("/v1/route", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def assert_error(response: httpx.Response, status: int, error: str) -> str:
    """Check the error contract and return the detail."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "detail", "request_id"}
    assert body["request_id"] == response.headers["x-request-id"]
    assert body["error"] == error
    return str(body["detail"])


# Health.


async def test_healthz(client: httpx.AsyncClient) -> None:
    response = await client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {}}


async def test_readyz_when_ready(examples: Served) -> None:
    response = await examples.client.get("/readyz")

    assert response.status_code == 200
    assert response.json() == {"status": "ready", "checks": {"storage": True, "model": True, "first_sync": True}}


async def test_readyz_says_starting_until_the_first_sync_is_done(
    serve: Callable[..., Any], counting: CountingEmbedder, counting_pool: EmbedderPool, examples_dir: Path
) -> None:
    hold = counting.pause(lambda texts: len(texts) > 1)
    try:
        async with serve(catalog=examples_dir, pool=counting_pool, ready=False) as served:
            async with asyncio.timeout(30):
                await hold.reached.wait()

            starting = await served.client.get("/readyz")
            hold.release()
            async with asyncio.timeout(60):
                await served.runtime.wait_ready()
            ready = await served.client.get("/readyz")
    finally:
        hold.release()

    assert starting.status_code == 503
    assert starting.json() == {"status": "starting", "checks": {"storage": True, "model": True, "first_sync": False}}
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready"


# Catalogs.


async def test_put_get_delete_a_catalog(client: httpx.AsyncClient) -> None:
    before = time.time()

    put = await client.put("/v1/catalogs/tools", json={"functions": [WEATHER, STOCKS, TIMEZONE]})
    got = await client.get("/v1/catalogs/tools")
    listed = await client.get("/v1/catalogs")
    deleted = await client.delete("/v1/catalogs/tools")
    gone = await client.get("/v1/catalogs/tools")

    assert put.status_code == 200
    assert put.json() == {"namespace": "tools", "added": 3, "updated": 0, "removed": 0, "unchanged": 0}
    body = got.json()
    assert (body["namespace"], body["source"], body["count"]) == ("tools", "api", 3)
    assert before <= body["updated_at"] <= time.time()
    assert sorted(body["functions"], key=lambda f: f["name"]) == sorted(
        [WEATHER, STOCKS, TIMEZONE], key=lambda f: f["name"]
    )
    assert listed.json() == {"catalogs": [{k: v for k, v in body.items() if k != "functions"}]}
    assert deleted.status_code == 200
    assert deleted.json() == {"namespace": "tools", "added": 0, "updated": 0, "removed": 3, "unchanged": 0}
    assert assert_error(gone, 404, "NamespaceNotFound") == "no catalog named 'tools'"
    assert (await client.get("/v1/catalogs")).json() == {"catalogs": []}


async def test_put_reconciles_against_what_is_stored(client: httpx.AsyncClient) -> None:
    await client.put("/v1/catalogs/tools", json={"functions": [WEATHER, STOCKS]})
    changed = {**STOCKS, "description": "Latest price and daily change of a listed share."}

    same = await client.put("/v1/catalogs/tools", json={"functions": [STOCKS, WEATHER]})
    mixed = await client.put("/v1/catalogs/tools", json={"functions": [changed, TIMEZONE]})
    emptied = await client.put("/v1/catalogs/tools", json={"functions": []})

    assert same.json() == {"namespace": "tools", "added": 0, "updated": 0, "removed": 0, "unchanged": 2}
    assert mixed.json() == {"namespace": "tools", "added": 1, "updated": 1, "removed": 1, "unchanged": 0}
    assert emptied.json() == {"namespace": "tools", "added": 0, "updated": 0, "removed": 2, "unchanged": 0}
    catalog = (await client.get("/v1/catalogs/tools")).json()
    assert (catalog["count"], catalog["functions"]) == (0, [])


async def test_catalogs_are_listed_by_namespace(client: httpx.AsyncClient) -> None:
    await client.put("/v1/catalogs/zeta", json={"functions": [WEATHER]})
    await client.put("/v1/catalogs/alpha", json={"functions": [WEATHER, STOCKS]})

    listed = (await client.get("/v1/catalogs")).json()["catalogs"]

    assert [(c["namespace"], c["count"], c["source"]) for c in listed] == [("alpha", 2, "api"), ("zeta", 1, "api")]


async def test_three_shapes_are_stored_and_returned_verbatim(client: httpx.AsyncClient) -> None:
    put = await client.put("/v1/catalogs/city", json={"functions": SHAPES})

    got = (await client.get("/v1/catalogs/city")).json()

    assert put.json()["added"] == 3
    by_name = {(f.get("function") or f)["name"]: f for f in got["functions"]}
    assert by_name == {"get_forecast": OPENAI, "book_table": BARE, "find_museum": MCP}


async def test_a_listed_tool_list_can_be_sent_back_as_a_catalog(client: httpx.AsyncClient) -> None:
    await client.put("/v1/catalogs/city", json={"functions": SHAPES})
    listed = (await client.get("/v1/catalogs/city/tools", params={"format": "openai", "load": "book_table"})).json()
    functions = [t for t in listed["tools"] if t["type"] == "function"]

    as_listed = await client.put("/v1/catalogs/city-copy", json={"functions": listed["tools"]})
    put = await client.put("/v1/catalogs/city-copy", json={"functions": functions})

    detail = assert_error(as_listed, 422, "CatalogInvalid")
    assert detail.endswith("functions[0].type: a 'tool_search' tool is not a function; leave it out")

    assert put.status_code == 200, put.text
    assert put.json()["added"] == 3
    copied = (await client.get("/v1/catalogs/city-copy")).json()["functions"]
    assert sorted(f["name"] for f in copied) == ["book_table", "find_museum", "get_forecast"]


async def test_an_anthropic_tool_list_keeps_its_schemas_as_a_catalog(client: httpx.AsyncClient) -> None:
    await client.put("/v1/catalogs/city", json={"functions": SHAPES})
    listed = (await client.get("/v1/catalogs/city/tools", params={"format": "anthropic"})).json()
    functions = [t for t in listed["tools"] if t["name"] != "tool_search"]

    put = await client.put("/v1/catalogs/city-copy", json={"functions": functions})

    assert put.status_code == 200, put.text
    original = {f["name"]: f["parameters"] for f in (await route_answer(client, "city"))["functions"]}
    copied = {f["name"]: f["parameters"] for f in (await route_answer(client, "city-copy"))["functions"]}
    assert copied == original
    assert original["get_forecast"]["properties"]  # a schema, not the empty one a lost input_schema gave


async def test_route_answers_openai_tools_for_every_shape(client: httpx.AsyncClient) -> None:
    await client.put("/v1/catalogs/city", json={"functions": SHAPES})

    response = await client.post(
        "/v1/route", json={"namespace": "city", "messages": user("Will it rain in Porto tomorrow?"), "max_functions": 3}
    )

    assert response.status_code == 200
    body = response.json()
    assert body["functions"][0]["name"] == "get_forecast"
    assert [t["function"]["name"] for t in body["tools"]] == [f["name"] for f in body["functions"]]
    tools = {t["function"]["name"]: t for t in body["tools"]}
    assert tools["get_forecast"] == OPENAI
    assert tools["book_table"] == {"type": "function", "function": BARE}
    assert tools["find_museum"] == {
        "type": "function",
        "function": {"name": "find_museum", "description": MCP["description"], "parameters": SCHEMA},
    }
    assert all(f["parameters"] == SCHEMA for f in body["functions"])
    assert {f["description"] for f in body["functions"]} == {
        OPENAI["function"]["description"],  # type: ignore[index]
        BARE["description"],
        MCP["description"],
    }


BAD_FUNCTIONS: dict[str, tuple[dict[str, Any], str]] = {
    # case: (the second function, the field the error must name)
    "missing-name": ({"description": "Nameless."}, "[1].name"),
    "malformed-name": ({**STOCKS, "name": "get stock"}, "[1].name"),
    "empty-name": ({**STOCKS, "name": ""}, "[1].name"),
    "duplicate-name": ({**STOCKS, "name": "get_weather"}, "[1].name"),
    "description-not-string": ({**STOCKS, "description": {"en": "Price"}}, "[1].description"),
    "parameters-not-object": ({**STOCKS, "parameters": ["ticker"]}, "[1].parameters"),
    "parameters-not-object-schema": ({**STOCKS, "parameters": {"type": "string"}}, "[1].parameters.type"),
    "openai-without-function": ({"type": "function", "function": "get_stock_price"}, "[1].function"),
}


@pytest.mark.parametrize("case", sorted(BAD_FUNCTIONS))
async def test_an_invalid_catalog_is_rejected_and_changes_nothing(client: httpx.AsyncClient, case: str) -> None:
    second, field = BAD_FUNCTIONS[case]
    await client.put("/v1/catalogs/tools", json={"functions": [WEATHER, TIMEZONE]})
    before = (await client.get("/v1/catalogs/tools")).json()

    response = await client.put("/v1/catalogs/tools", json={"functions": [WEATHER, second, TIMEZONE]})

    detail = assert_error(response, 422, "CatalogInvalid")
    assert "/v1/catalogs/tools" in detail
    assert f"{field}:" in detail
    assert (await client.get("/v1/catalogs/tools")).json() == before


async def test_an_invalid_new_catalog_creates_nothing(client: httpx.AsyncClient) -> None:
    response = await client.put("/v1/catalogs/fresh", json={"functions": [WEATHER, {"name": 7}]})

    assert_error(response, 422, "CatalogInvalid")
    assert_error(await client.get("/v1/catalogs/fresh"), 404, "NamespaceNotFound")


async def test_an_invalid_function_is_named_by_its_path_in_the_body(client: httpx.AsyncClient) -> None:
    response = await client.put("/v1/catalogs/tools", json={"functions": [WEATHER, {"name": "bad name"}]})

    assert "functions[1].name" in assert_error(response, 422, "CatalogInvalid")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "functions"),
        ({"functions": {"name": "a"}}, "functions"),
        ({"functions": "get_weather"}, "functions"),
        ({"functions": [WEATHER], "tools": []}, "tools"),
        ([WEATHER], "body"),
    ],
)
async def test_a_malformed_body_is_rejected_naming_the_field(client: httpx.AsyncClient, body: Any, field: str) -> None:
    response = await client.put("/v1/catalogs/tools", json=body)

    detail = assert_error(response, 422, "ValidationError")
    assert detail.startswith(f"{field}: ")


async def test_a_body_that_is_not_json_is_rejected(client: httpx.AsyncClient) -> None:
    response = await client.put(
        "/v1/catalogs/tools", content=b'{"functions": [', headers={"content-type": "application/json"}
    )

    assert "JSON" in assert_error(response, 422, "ValidationError")


@pytest.mark.parametrize("namespace", ["has space", "x" * 65, "semi;colon"])
async def test_an_invalid_namespace_is_rejected(client: httpx.AsyncClient, namespace: str) -> None:
    put = await client.put(f"/v1/catalogs/{namespace}", json={"functions": [WEATHER]})
    got = await client.get(f"/v1/catalogs/{namespace}")

    assert assert_error(put, 422, "ValidationError").startswith("namespace: ")
    assert assert_error(got, 422, "ValidationError").startswith("namespace: ")


@pytest.mark.parametrize("namespace", ["%2E", "%2E%2E", "..."])
async def test_a_namespace_of_dots_is_refused(client: httpx.AsyncClient, namespace: str) -> None:
    # "/v1/catalogs/.." is another path to every HTTP client: such a catalog could not be read or deleted.
    put = await client.put(f"/v1/catalogs/{namespace}", json={"functions": [WEATHER]})
    assert "must hold more than dots" in assert_error(put, 422, "CatalogInvalid")
    assert [c["namespace"] for c in (await client.get("/v1/catalogs")).json()["catalogs"]] == []


async def test_unknown_namespaces_answer_404(client: httpx.AsyncClient) -> None:
    got = await client.get("/v1/catalogs/nowhere")
    deleted = await client.delete("/v1/catalogs/nowhere")
    routed = await client.post("/v1/route", json={"namespace": "nowhere", "messages": user("hello")})

    for response in (got, deleted, routed):
        assert assert_error(response, 404, "NamespaceNotFound") == "no catalog named 'nowhere'"


@pytest.mark.parametrize(
    ("method", "path", "status", "error"),
    [
        ("GET", "/v1/nowhere", 404, "NotFound"),
        ("POST", "/v1/catalogs", 405, "MethodNotAllowed"),
        # An id holding "/" is refused, before it can match another route ("travel/examples").
        ("POST", "/v1/sessions/a%2Fb/messages", 422, "InvalidRequest"),
        ("DELETE", "/v1/users/u%2F1/memories", 422, "InvalidRequest"),
        ("DELETE", "/v1/catalogs/travel%2Fexamples", 422, "InvalidRequest"),
        ("GET", "/v1/catalogs/travel%2fmisses", 422, "InvalidRequest"),
    ],
)
async def test_unknown_paths_and_methods_answer_the_error_contract(
    client: httpx.AsyncClient, method: str, path: str, status: int, error: str
) -> None:
    response = await client.request(method, path)

    assert_error(response, status, error)


async def test_the_endpoint_table_of_the_api_guide_lists_every_endpoint(client: httpx.AsyncClient) -> None:
    table = (ROOT / "docs" / "api.md").read_text().split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `(GET|PUT|POST|DELETE) ([^`?]+)`", table, re.MULTILINE))
    paths = (await client.get("/openapi.json")).json()["paths"]
    served = {(method.upper(), path) for path, methods in paths.items() for method in methods}
    assert served - listed == set()


async def test_openapi_documents_the_error_responses(client: httpx.AsyncClient) -> None:
    paths = (await client.get("/openapi.json")).json()["paths"]

    assert set(paths["/v1/route"]["post"]["responses"]) >= {"200", "404", "422", "503"}
    assert set(paths["/v1/catalogs/{namespace}"]["put"]["responses"]) >= {"200", "422", "503"}
    assert set(paths["/v1/catalogs/{namespace}"]["delete"]["responses"]) >= {"200", "404", "422", "503"}
    error = paths["/v1/route"]["post"]["responses"]["404"]["content"]["application/json"]["schema"]
    assert error == {"$ref": "#/components/schemas/ErrorOut"}


# Routing over the example catalog.


async def route(served: Served, **body: Any) -> httpx.Response:
    return await served.client.post("/v1/route", json=body)


async def test_example_catalogs_are_all_loaded(examples: Served) -> None:
    listed = (await examples.client.get("/v1/catalogs")).json()["catalogs"]

    assert {c["namespace"]: c["count"] for c in listed} == EXAMPLE_COUNTS


async def test_a_catalog_of_the_directory_is_changed_in_its_file_not_here(examples: Served) -> None:
    before = (await examples.client.get("/v1/catalogs/travel")).json()

    put = await examples.client.put("/v1/catalogs/travel", json={"functions": [BARE]})
    deleted = await examples.client.delete("/v1/catalogs/travel")

    for response in (put, deleted):
        detail = assert_error(response, 409, "CatalogConflict")
        assert detail.startswith(f"catalog 'travel' is kept from the catalog directory {EXAMPLES.resolve()}: edit")
    assert (await examples.client.get("/v1/catalogs/travel")).json() == before


async def test_a_new_file_of_the_directory_is_kept_before_its_first_pass(
    serve: Callable[..., Any], catalog_dir: Path
) -> None:
    write_catalog(catalog_dir, "weather", [WEATHER])
    async with serve(catalog=catalog_dir) as served:
        write_catalog(catalog_dir, "stocks", [STOCKS])  # the worker may not have read it yet

        put = await served.client.put("/v1/catalogs/stocks", json={"functions": [TIMEZONE]})
        elsewhere = await served.client.put("/v1/catalogs/clocks", json={"functions": [TIMEZONE]})

    assert assert_error(put, 409, "CatalogConflict").startswith("catalog 'stocks' is kept from the catalog directory")
    assert elsewhere.status_code == 200, elsewhere.text


@pytest.mark.parametrize(
    ("namespace", "query", "expected"),
    [
        ("travel", "find me a flight from Lisbon to Rome", "search_flights"),
        ("travel", "I need a hotel room in Berlin for two nights", "search_hotels"),
        ("devops", "roll back the checkout service to the previous release", "rollback_deployment"),
        ("commerce", "where is my parcel? track the shipment of my order", "track_shipment"),
        ("workspace", "schedule a meeting with the design team on Monday at 10", "create_calendar_event"),
    ],
)
async def test_route_finds_the_relevant_function(examples: Served, namespace: str, query: str, expected: str) -> None:
    response = await route(examples, namespace=namespace, messages=user(query))

    assert response.status_code == 200
    body = response.json()
    names = [f["name"] for f in body["functions"]]
    assert expected in names
    assert len(names) == 3  # the default max_functions
    assert body["context"] == query


async def test_route_returns_only_functions_of_its_namespace(examples: Served) -> None:
    catalog = (await examples.client.get("/v1/catalogs/devops")).json()
    devops = {f["name"] for f in catalog["functions"]}

    response = await route(examples, namespace="devops", messages=user("book a flight to Rome"), max_functions=16)

    assert {f["name"] for f in response.json()["functions"]} == devops


@pytest.mark.parametrize("limit", [1, 5, 15])
async def test_route_respects_max_functions(examples: Served, limit: int) -> None:
    response = await route(examples, namespace="travel", messages=user("trip to Rome"), max_functions=limit)

    body = response.json()
    scores = [f["score"] for f in body["functions"]]
    assert len(scores) == limit
    assert scores == sorted(scores, reverse=True)
    assert [t["function"]["name"] for t in body["tools"]] == [f["name"] for f in body["functions"]]


async def test_route_returns_at_most_the_whole_catalog(examples: Served) -> None:
    response = await route(examples, namespace="travel", messages=user("trip to Rome"), max_functions=100)

    assert len(response.json()["functions"]) == EXAMPLE_COUNTS["travel"]


async def test_route_respects_min_score(examples: Served) -> None:
    messages = user("find me a flight from Lisbon to Rome")
    everything = (await route(examples, namespace="travel", messages=messages, max_functions=15)).json()
    scores = [f["score"] for f in everything["functions"]]
    threshold = (scores[1] + scores[2]) / 2

    above = (await route(examples, namespace="travel", messages=messages, max_functions=15, min_score=threshold)).json()
    none = (await route(examples, namespace="travel", messages=messages, min_score=1.0)).json()

    assert [f["name"] for f in above["functions"]] == [f["name"] for f in everything["functions"][:2]]
    assert len(above["tools"]) == 2
    assert none["functions"] == none["tools"] == []


async def test_route_reads_only_user_text(examples: Served) -> None:
    messages = [
        {"role": "system", "content": "You are a helpful DevOps assistant."},
        {"role": "user", "content": [{"type": "text", "text": "find me a flight"}, {"type": "image_url"}]},
        {"role": "assistant", "content": "Where to?"},
        {"role": "user", "content": "from Lisbon to Rome"},
    ]

    response = await route(examples, namespace="travel", messages=messages)

    body = response.json()
    assert body["context"] == "find me a flight\nfrom Lisbon to Rome"
    assert "search_flights" in [f["name"] for f in body["functions"]]


async def test_route_without_messages_is_422(examples: Served) -> None:
    response = await route(examples, namespace="travel", messages=[])

    assert assert_error(response, 422, "ValidationError").startswith("messages: ")


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "assistant", "content": "How can I help?"}],
        [{"role": "user", "content": "   "}],
        [{"role": "user", "content": None}],
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
    ],
)
async def test_route_without_user_text_is_422(examples: Served, messages: list[dict[str, Any]]) -> None:
    response = await route(examples, namespace="travel", messages=messages)

    assert assert_error(response, 422, "InvalidRequest").startswith("messages: ")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"max_functions": 0}, "max_functions"),
        ({"max_functions": 129}, "max_functions"),
        ({"min_score": 1.5}, "min_score"),
        ({"namespace": "not valid"}, "namespace"),
        ({"messages": [{"content": "no role"}]}, "messages[0].role"),
        ({"unknown": True}, "unknown"),
        # Wrong types are refused, not converted: true is no count, "3" no number, "yes" no flag.
        ({"max_functions": True}, "max_functions"),
        ({"max_functions": "3"}, "max_functions"),
        ({"explain": "yes"}, "explain"),
        ({"defer_rest": "false"}, "defer_rest"),
        ({"messages": [{"role": "user", "content": 123}]}, "messages[0].content"),
    ],
)
async def test_route_rejects_bad_fields_naming_them(examples: Served, change: dict[str, Any], field: str) -> None:
    body = {"namespace": "travel", "messages": user("find me a flight"), **copy.deepcopy(change)}

    response = await examples.client.post("/v1/route", json=body)

    assert assert_error(response, 422, "ValidationError").startswith(f"{field}: ")
