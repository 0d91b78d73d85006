"""Bad and oversized requests through the app: a clear 4xx naming the field or the limit, and nothing changes.

After every refused request the catalog and the session are read back unchanged.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from router.api.limits import LARGE_BODY
from router.catalog.limits import MIB, LimitSettings
from tests.conftest import STOCKS, TIMEZONE, WEATHER, Served, bare, write_catalog

pytestmark = pytest.mark.integration

JSON = {"content-type": "application/json"}
TURN = [{"role": "user", "content": "Find me a flight from Lisbon to Rome"}]
SMALL = LimitSettings(body_bytes=4096, catalog_bytes=64 * 1024, messages=5, functions=50, text_chars=500, depth=12)
FLIGHTS = bare("search_flights", "Search flight offers between two airports.", origin="From", destination="To")


@pytest.fixture
def guarded(serve: Callable[..., Any], catalog_dir: Path) -> Callable[..., Any]:
    """``guarded(limits)``: the app over catalog ``travel`` (four functions), session ``trip`` holding one turn."""
    write_catalog(catalog_dir, "travel", [FLIGHTS, WEATHER, STOCKS, TIMEZONE])

    @asynccontextmanager
    async def start(limits: LimitSettings = SMALL) -> AsyncIterator[Served]:
        async with serve(catalog=catalog_dir, limits=limits) as served:
            stored = await served.client.post(
                "/v1/sessions/trip/messages", json={"namespace": "travel", "messages": TURN}
            )
            assert stored.status_code == 200, stored.text
            yield served

    return start


async def state(served: Served) -> tuple[Any, Any]:
    catalog = await served.client.get("/v1/catalogs/travel")
    session = await served.client.get("/v1/sessions/trip/messages")
    return catalog.json(), session.json()


def refused(response: httpx.Response, status: int, error: str, detail: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"] == error
    assert detail in response.json()["detail"], response.json()["detail"]


async def chunks(data: bytes, size: int = 1000) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def body(**fields: Any) -> bytes:
    return json.dumps({"namespace": "travel", "messages": TURN, **fields}).encode()


async def test_an_oversized_body_is_refused_before_it_is_parsed(guarded: Callable[..., Any]) -> None:
    async with guarded() as served:
        before = await state(served)
        padded = body(user_id="u" * 5000)
        post = functools.partial(served.client.post, headers=JSON)
        by_length = await post("/v1/sessions/trip/messages", content=padded)
        streamed = await post("/v1/sessions/trip/messages", content=chunks(padded))
        routed = await post("/v1/route", content=chunks(padded))
        catalog = json.dumps({"functions": [WEATHER] * 1000}).encode()
        put = await served.client.put("/v1/catalogs/travel", content=chunks(catalog), headers=JSON)

        refused(by_length, 413, "PayloadTooLarge", f"request body: {len(padded)} bytes; at most 4096")
        refused(streamed, 413, "PayloadTooLarge", "request body: more than 4096 bytes (ROUTER_LIMIT_BODY_BYTES)")
        refused(routed, 413, "PayloadTooLarge", "request body: more than 4096 bytes (ROUTER_LIMIT_BODY_BYTES)")
        refused(put, 413, "PayloadTooLarge", f"more than {64 * 1024} bytes (ROUTER_LIMIT_CATALOG_BYTES)")
        assert await state(served) == before


async def test_a_catalog_may_be_larger_than_other_bodies(guarded: Callable[..., Any]) -> None:
    functions = [{**WEATHER, "name": f"get_weather_{i}"} for i in range(30)]
    document = json.dumps({"functions": functions}).encode()
    assert SMALL.body_bytes < len(document) < SMALL.catalog_bytes
    async with guarded() as served:
        put = await served.client.put("/v1/catalogs/weather", content=chunks(document), headers=JSON)

        assert put.status_code == 200, put.text
        assert put.json()["added"] == 30


async def test_default_limits_hold_a_route_of_a_mebibyte_and_no_more(guarded: Callable[..., Any]) -> None:
    async with guarded(LimitSettings()) as served:
        before = await state(served)
        filler = [{"role": "assistant", "content": "x" * 90_000}] * 12
        document = {"namespace": "travel", "messages": filler}
        too_big = await served.client.post("/v1/sessions/trip/messages", json=document)

        refused(too_big, 413, "PayloadTooLarge", f"at most {MIB} (ROUTER_LIMIT_BODY_BYTES)")
        assert await state(served) == before


# Each bad body, the kind of error and what its detail says; route bodies also name session "trip".
BAD_BODIES: list[tuple[str, Any, str, str]] = [
    ("/v1/route", {"messages": TURN * 6}, "InvalidRequest", "messages: 6 messages; at most 5 per request"),
    (
        "/v1/sessions/trip/messages",
        {"messages": [{"role": "user", "content": "y" * 501}]},
        "InvalidRequest",
        "messages[0].content: the text has 501 characters; at most 500 (ROUTER_LIMIT_TEXT_CHARS)",
    ),
    (
        "/v1/sessions/trip/messages",
        {"messages": [{"role": "user", "content": "I prefer\x00 aisle seats"}]},
        "InvalidRequest",
        r"messages[0].content: the text contains a NUL character (\u0000)",
    ),
    (
        "/v1/sessions/trip/messages",
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "a\x00"}]}]},
        "InvalidRequest",
        r"messages[0].content[0].text: the text contains a NUL character (\u0000)",
    ),
    ("/v1/route", {"messages": TURN, "user_id": "ana\x00"}, "InvalidRequest", "user_id: the text contains a NUL"),
    (
        "/v1/sessions/trip/messages",
        {"messages": [{"role": "user", "content": "hi", "meta": {"a": [[[[[[[[[[[1]]]]]]]]]]]}}]},
        "InvalidRequest",
        "messages[0].meta.a[0][0][0][0][0][0][0][0]: nested deeper than 12 levels (ROUTER_LIMIT_DEPTH)",
    ),
    ("/v1/route", {"messages": TURN, "max_functions": 129}, "ValidationError", "max_functions: Input should be less"),
    ("/v1/route", {"messages": TURN, "max_functions": "many"}, "ValidationError", "max_functions: Input should be a"),
    ("/v1/route", {"messages": "hi"}, "ValidationError", "messages: Input should be a valid list"),
    ("/v1/route", {"messages": [{"content": "hi"}]}, "ValidationError", "messages[0].role: Field required"),
    ("/v1/route", {"messages": TURN, "namespace": "a/b"}, "ValidationError", "namespace: String should match pattern"),
    ("/v1/route", {"messages": TURN, "session_id": "a\nb"}, "ValidationError", "session_id: String should match"),
    ("/v1/route", {"messages": TURN, "surprise": 1}, "ValidationError", "surprise: Extra inputs are not permitted"),
    ("/v1/sessions/trip/messages", {"messages": TURN, "namespace": 7}, "ValidationError", "namespace: Input should"),
    ("/v1/sessions/trip/messages", [1, 2], "ValidationError", "Input should be a valid dictionary"),
]


async def test_a_bad_body_names_the_field_and_changes_nothing(guarded: Callable[..., Any]) -> None:
    async with guarded() as served:
        before = await state(served)
        for path, document, error, detail in BAD_BODIES:
            if path == "/v1/route":
                document = {"namespace": "travel", "session_id": "trip", **document}

            response = await served.client.post(path, json=document)

            refused(response, 422, error, detail)
        assert await state(served) == before


async def test_a_bad_catalog_names_the_field_and_changes_nothing(guarded: Callable[..., Any]) -> None:
    async with guarded() as served:
        before = await state(served)
        put = served.client.put
        nul = await put("/v1/catalogs/travel", json={"functions": [{**WEATHER, "description": "Weather\x00"}]})
        nul_name = await put("/v1/catalogs/travel", json={"functions": [{**WEATHER, "name": "get\x00weather"}]})
        many = await put("/v1/catalogs/travel", json={"functions": [WEATHER] * 51})
        shape = await put("/v1/catalogs/travel", json={"functions": [{"name": "a b"}]})
        not_list = await put("/v1/catalogs/travel", json={"functions": "everything"})
        pinned = await put("/v1/catalogs/travel", json={"functions": [WEATHER], "pinned": [{}]})
        bad_namespace = await put("/v1/catalogs/bad%20name", json={"functions": [WEATHER]})

        refused(nul, 422, "InvalidRequest", r"functions[0].description: the text contains a NUL character (\u0000)")
        refused(nul_name, 422, "InvalidRequest", r"functions[0].name: the text contains a NUL character")
        refused(many, 422, "InvalidRequest", "functions: 51 functions; at most 50 per catalog (ROUTER_LIMIT_FUNCTIONS)")
        refused(shape, 422, "CatalogInvalid", "functions[0].name")
        refused(not_list, 422, "ValidationError", "functions: Input should be a valid list")
        refused(pinned, 422, "ValidationError", "pinned[0]: Input should be a valid string")
        refused(bad_namespace, 422, "ValidationError", "namespace: String should match pattern")
        assert await state(served) == before
        assert (await served.client.get("/v1/catalogs/bad%20name")).status_code == 422


# Bodies that are no JSON document, or no JSON object: what arrives, its content type, the status and
# what the detail says. NaN and a lone surrogate are no JSON (the standard decoder takes both, which storage
# and the tokenizer then fail on).
NOT_JSON: list[tuple[bytes, str, str]] = [
    (b'{"namespace": "travel", "messages": [', "application/json", "body: not valid JSON at character 37"),
    (b"\xff\xfe{}", "application/json", "body: not valid JSON at character 0 (byte 0, 0xff, is not UTF-8)"),
    ('{"namespace": "caf\xe9"}'.encode("latin-1"), "application/json",
     "body: not valid JSON at character 18 (byte 18, 0xe9, is not UTF-8)"),
    (b'{"namespace": "travel", "messages": [{"role": "user", "content": "hi", "n": NaN}]}', "application/json",
     "body: not valid JSON at character 76"),
    (b'{"namespace": "travel", "messages": [{"role": "user", "content": "\\ud800 flight"}]}', "application/json",
     "body: not valid JSON"),
    (b"[" * 100_000 + b"]" * 100_000, "application/json", "(depth limit exceeded)"),
    (b"", "application/json", "Field required"),
    (b"namespace=travel", "application/x-www-form-urlencoded",
     "body: send JSON with content-type: application/json (got application/x-www-form-urlencoded)"),
    (b'{"namespace": "travel"}', "text/plain", "body: send JSON with content-type: application/json (got text/plain)"),
]  # fmt: skip


async def test_a_body_that_is_not_a_json_object_is_refused(guarded: Callable[..., Any]) -> None:
    async with guarded(LimitSettings()) as served:
        before = await state(served)
        for content, content_type, detail in NOT_JSON:
            for method, path in [
                ("POST", "/v1/sessions/trip/messages"),
                ("POST", "/v1/route"),
                ("POST", "/v1/tool_search"),
                ("PUT", "/v1/catalogs/travel"),
            ]:
                response = await served.client.request(
                    method, path, content=content, headers={"content-type": content_type}
                )

                refused(response, 422, "ValidationError", detail)
        assert await state(served) == before
        good = await served.client.put(
            "/v1/catalogs/weather",
            content=orjson.dumps({"functions": [WEATHER]}),
            headers={"content-type": "application/json"},
        )
        assert good.status_code == 200, good.text


async def test_a_bad_session_id_is_refused(guarded: Callable[..., Any]) -> None:
    async with guarded() as served:
        before = await state(served)
        for session in ("a%00b", "a%0Ab", "a%7Fb", "x" * 257):
            posted = await served.client.post(f"/v1/sessions/{session}/messages", json={"messages": TURN})
            read = await served.client.get(f"/v1/sessions/{session}/messages")
            deleted = await served.client.delete(f"/v1/sessions/{session}")

            for response in (posted, read, deleted):
                refused(response, 422, "ValidationError", "session_id: String should match pattern")
        # Escapes that are no UTF-8 would all decode to U+FFFD: "x%FEy" and "x%FFy" would name one session.
        for path in ("/v1/sessions/x%FFy/messages", "/v1/users/x%FEy/memories", "/v1/sessions/x%C0%80"):
            for method in ("GET", "POST", "DELETE"):
                answer = await served.client.request(method, path, json={"messages": TURN})
                refused(answer, 422, "InvalidRequest", "path: its escapes are not UTF-8")
        assert (await served.client.get("/v1/sessions/x%EF%BF%BDy/messages")).status_code == 200  # U+FFFD itself
        assert await state(served) == before


async def test_a_large_catalog_is_checked_as_closely_as_a_small_one(guarded: Callable[..., Any]) -> None:
    limits = LimitSettings(catalog_bytes=8 * MIB, functions=20_000, text_chars=500, depth=12)
    words = "words " * 60
    functions = [
        {**WEATHER, "name": f"get_weather_{i}", "description": f'Weather "[{i}]" \\ {{now}} {words}'}
        for i in range(2500)
    ]
    assert len(orjson.dumps({"functions": functions})) > LARGE_BODY  # checked off the loop, from its bytes first
    bad = {
        "a NUL": ({"description": "rain\x00"}, r"functions[2100].description: the text contains a NUL character"),
        "a long text": ({"description": "y" * 501}, "functions[2100].description: the text has 501 characters"),
        "deep nesting": (
            {"parameters": {"type": "object", "properties": {"a": {"items": [[[[[[[1]]]]]]]}}}},
            "functions[2100].parameters.properties.a.items[0][0][0][0][0][0]: nested deeper than 12 levels",
        ),
    }
    async with guarded(limits) as served:
        before = await state(served)
        for change, detail in bad.values():
            document = {"functions": [*functions[:2100], {**functions[2100], **change}, *functions[2101:]]}
            put = await served.client.put("/v1/catalogs/travel", content=orjson.dumps(document), headers=JSON)
            refused(put, 422, "InvalidRequest", detail)
            assert await state(served) == before
        fine = await served.client.put(
            "/v1/catalogs/weather", content=orjson.dumps({"functions": functions}), headers=JSON
        )
        assert fine.status_code == 200, fine.text
        assert fine.json()["added"] == 2500
