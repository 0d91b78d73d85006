"""API keys through the app: 401 without a key, 403 outside a key's namespaces, health open, keys never logged.

The app runs with its lifespan, the real model and embedded storage, over the example catalog
(namespaces commerce, devops, travel, workspace).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from router.api.keys import AuthSettings
from router.client import AsyncRouterClient, AuthenticationError, PermissionDeniedError, RetryPolicy
from router.common.errors import Forbidden, Unauthorized
from router.mcp.remote import RemoteBackend
from router.server.logs import JsonFormatter
from tests.conftest import EXAMPLES, WEATHER, Served

pytestmark = pytest.mark.integration

ADMIN = "admin-7f3a9c1e5b2d4f6a8c0e"
TRAVEL = "travel-2b4d6f8a0c1e3a5c7e9b"
DEVOPS = "devops-9e7c5a3f1d2b4c6e8a0f"
WRONG = "wrong-0000000000000000000000"
KEYS = {ADMIN: "*", TRAVEL: ["travel"], DEVOPS: ["devops"]}
REQUIRED = 'Bearer realm="tool-router"'
INVALID = 'Bearer realm="tool-router", error="invalid_token"'
TURN = [{"role": "user", "content": "Find me a flight from Lisbon to Rome"}]
# One request of every /v1 operation.
OPERATIONS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("POST", "/v1/route", {"namespace": "travel", "messages": TURN}),
    ("GET", "/v1/catalogs", None),
    ("GET", "/v1/catalogs/travel", None),
    ("GET", "/v1/catalogs/travel/tools", None),
    ("GET", "/v1/catalogs/travel/misses", None),
    ("GET", "/v1/catalogs/travel/examples", None),
    ("DELETE", "/v1/catalogs/travel/examples", None),
    ("POST", "/v1/tool_search", {"namespace": "travel", "query": "Find me a flight"}),
    ("POST", "/v1/sessions/s-1/messages", {"namespace": "travel", "messages": TURN}),
    ("GET", "/v1/sessions/s-1/messages", None),
    ("DELETE", "/v1/sessions/s-1", None),
    ("PUT", "/v1/catalogs/weather", {"functions": [WEATHER]}),
    ("DELETE", "/v1/catalogs/weather", None),
    ("GET", "/v1/no-such-thing", None),
]


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


@asynccontextmanager
async def keyed(serve: Callable[..., Any]) -> AsyncIterator[Served]:
    async with serve(catalog=EXAMPLES, auth=AuthSettings(api_keys=json.dumps(KEYS))) as served:
        yield served


async def call(served: Served, method: str, path: str, body: Any = None, *, key: str | None) -> httpx.Response:
    headers = bearer(key) if key is not None else {}
    return await served.client.request(method, path, json=body, headers=headers)


async def snapshot(served: Served, path: str) -> Any:
    response = await call(served, "GET", path, key=ADMIN)
    assert response.status_code == 200, response.text
    return response.json()


async def test_every_v1_operation_needs_a_valid_key(serve: Callable[..., Any]) -> None:
    async with keyed(serve) as served:
        before = await snapshot(served, "/v1/catalogs/travel")
        for method, path, body in OPERATIONS:
            missing = await call(served, method, path, body, key=None)
            wrong = await call(served, method, path, body, key=WRONG)
            other_scheme = await served.client.request(
                method, path, json=body, headers={"authorization": f"Basic {ADMIN}"}
            )

            assert (missing.status_code, wrong.status_code, other_scheme.status_code) == (401, 401, 401), path
            assert missing.json() == {
                "request_id": missing.headers["x-request-id"],
                "error": "Unauthorized",
                "detail": "an API key is required: send Authorization: Bearer <key>",
            }
            assert wrong.json() == {
                "error": "Unauthorized",
                "detail": "the API key is not valid",
                "request_id": wrong.headers["x-request-id"],
            }
            assert (missing.headers["www-authenticate"], wrong.headers["www-authenticate"]) == (REQUIRED, INVALID)
        assert await snapshot(served, "/v1/catalogs/travel") == before


async def test_health_and_documentation_stay_open(serve: Callable[..., Any]) -> None:
    async with keyed(serve) as served:
        for path in ("/healthz", "/readyz", "/openapi.json", "/docs"):
            assert (await served.client.get(path)).status_code == 200, path


async def test_a_key_for_every_namespace_reaches_everything(serve: Callable[..., Any]) -> None:
    async with keyed(serve) as served:
        statuses = [(await call(served, m, p, b, key=ADMIN)).status_code for m, p, b in OPERATIONS[:-1]]

        assert statuses == [200] * len(OPERATIONS[:-1])


async def test_a_limited_key_sees_and_changes_only_its_catalogs(serve: Callable[..., Any]) -> None:
    async with keyed(serve) as served:
        devops = await snapshot(served, "/v1/catalogs/devops")

        listed = await call(served, "GET", "/v1/catalogs", key=TRAVEL)
        own = await call(served, "GET", "/v1/catalogs/travel", key=TRAVEL)
        other = await call(served, "GET", "/v1/catalogs/devops", key=TRAVEL)
        own_misses = await call(served, "GET", "/v1/catalogs/travel/misses", key=TRAVEL)
        other_misses = await call(served, "GET", "/v1/catalogs/devops/misses", key=TRAVEL)
        unknown = await call(served, "GET", "/v1/catalogs/no-such-catalog", key=TRAVEL)
        replaced = await call(served, "PUT", "/v1/catalogs/devops", {"functions": [WEATHER]}, key=TRAVEL)
        deleted = await call(served, "DELETE", "/v1/catalogs/devops", key=TRAVEL)
        created = await call(served, "PUT", "/v1/catalogs/weather", {"functions": [WEATHER]}, key=TRAVEL)

        assert [c["namespace"] for c in listed.json()["catalogs"]] == ["travel"]
        assert (own.status_code, own_misses.status_code) == (200, 200)
        for refused in (other, other_misses, unknown, replaced, deleted, created):
            assert refused.status_code == 403
            assert refused.json()["error"] == "Forbidden"
            assert refused.json()["detail"].startswith("namespace: this API key may not use namespace")
        assert await snapshot(served, "/v1/catalogs/devops") == devops
        assert (await call(served, "GET", "/v1/catalogs/weather", key=ADMIN)).status_code == 404
        all_namespaces = [c["namespace"] for c in (await snapshot(served, "/v1/catalogs"))["catalogs"]]
        assert sorted(all_namespaces) == ["commerce", "devops", "travel", "workspace"]


async def test_a_limited_key_routes_only_in_its_namespaces(serve: Callable[..., Any]) -> None:
    async with keyed(serve) as served:
        own = await call(served, "POST", "/v1/route", {"namespace": "travel", "messages": TURN}, key=TRAVEL)
        other = await call(served, "POST", "/v1/route", {"namespace": "devops", "messages": TURN}, key=TRAVEL)
        default = await call(served, "POST", "/v1/route", {"messages": TURN}, key=TRAVEL)

        assert own.status_code == 200
        assert own.json()["functions"][0]["name"] == "search_flights"
        assert (other.status_code, default.status_code) == (403, 403)
        assert other.json()["detail"] == "namespace: this API key may not use namespace 'devops'"
        assert default.json()["detail"] == "namespace: this API key may not use namespace 'default'"


async def test_a_session_belongs_to_the_namespaces_of_its_messages(serve: Callable[..., Any]) -> None:
    async with keyed(serve) as served:
        stored = await call(
            served, "POST", "/v1/sessions/trip/messages", {"namespace": "travel", "messages": TURN}, key=TRAVEL
        )
        assert stored.status_code == 200, stored.text
        own = await call(served, "GET", "/v1/sessions/trip/messages", key=TRAVEL)
        assert [(m["content"], m["namespace"]) for m in own.json()["messages"]] == [(TURN[0]["content"], "travel")]
        follow_up = {"namespace": "travel", "session_id": "trip", "messages": [{"role": "user", "content": "Book it"}]}
        routed = await call(served, "POST", "/v1/route", follow_up, key=TRAVEL)
        assert routed.status_code == 200
        assert [m["content"] for m in routed.json()["history"]] == [TURN[0]["content"]]
        before = await snapshot(served, "/v1/sessions/trip/messages")

        intruder = [
            await call(served, "GET", "/v1/sessions/trip/messages", key=DEVOPS),
            await call(
                served, "POST", "/v1/sessions/trip/messages", {"namespace": "devops", "messages": TURN}, key=DEVOPS
            ),
            await call(served, "DELETE", "/v1/sessions/trip", key=DEVOPS),
            await call(served, "POST", "/v1/route", {**follow_up, "namespace": "devops"}, key=DEVOPS),
        ]

        for refused in intruder:
            assert refused.status_code == 403, refused.text
            assert refused.json() == {
                "request_id": refused.headers["x-request-id"],
                "error": "Forbidden",
                "detail": "session 'trip' holds messages of namespaces this API key may not use",
            }
        assert await snapshot(served, "/v1/sessions/trip/messages") == before
        new = await call(served, "GET", "/v1/sessions/fresh/messages", key=DEVOPS)
        assert (new.status_code, new.json()["messages"]) == (200, [])


async def test_a_limited_key_must_name_a_namespace_to_store_messages(serve: Callable[..., Any]) -> None:
    async with keyed(serve) as served:
        unnamed = await call(served, "POST", "/v1/sessions/s/messages", {"messages": TURN}, key=TRAVEL)
        shared = await call(served, "POST", "/v1/sessions/shared/messages", {"messages": TURN}, key=ADMIN)
        reach = await call(served, "GET", "/v1/sessions/shared/messages", key=TRAVEL)

        assert unnamed.status_code == 403
        assert unnamed.json()["detail"] == "namespace: this API key is limited to ['travel']; name one of them"
        assert (await snapshot(served, "/v1/sessions/s/messages"))["messages"] == []
        # Stored without a namespace, the messages hold for every namespace: only unrestricted keys reach them.
        assert shared.status_code == 200
        assert reach.status_code == 403


async def test_keys_never_reach_the_logs(serve: Callable[..., Any], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with keyed(serve) as served:
        for key in (ADMIN, TRAVEL, DEVOPS, WRONG):
            for method, path, body in OPERATIONS:
                await call(served, method, path, body, key=key)
            await served.client.post("/v1/route", content=b"{not json", headers=bearer(key))

    assert len(caplog.records) > 0
    formatter = JsonFormatter()
    for record in caplog.records:
        line = formatter.format(record)
        for key in (ADMIN, TRAVEL, DEVOPS, WRONG):
            assert key not in line


async def test_the_openapi_document_declares_the_bearer_scheme(serve: Callable[..., Any]) -> None:
    async with keyed(serve) as served:
        document = (await served.client.get("/openapi.json")).json()

    assert document["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"
    for path, operations in document["paths"].items():
        for operation in operations.values():
            secured = operation.get("security") == [{"apiKey": []}]
            assert secured is path.startswith("/v1/"), path
            if secured:
                # The status answers while starting or with storage down, and says so in its body.
                expected = {"401"} if path == "/v1/status" else {"401", "503"}
                assert expected <= set(operation["responses"]), path


async def test_the_client_sends_its_key(serve: Callable[..., Any]) -> None:
    async with keyed(serve) as served:
        transport = httpx.ASGITransport(app=served.app)
        once = RetryPolicy(attempts=1)
        async with (
            AsyncRouterClient("http://test", api_key=TRAVEL, transport=transport) as travel,
            AsyncRouterClient("http://test", transport=transport, retry=once) as anonymous,
            AsyncRouterClient("http://test", api_key=WRONG, transport=transport, retry=once) as wrong,
        ):
            result = await travel.route("travel", "Find me a flight from Lisbon to Rome")
            listed = await travel.list_catalogs()
            with pytest.raises(PermissionDeniedError) as denied:
                await travel.get_catalog("devops")
            with pytest.raises(AuthenticationError) as missing:
                await anonymous.route("travel", "Find me a flight")
            with pytest.raises(AuthenticationError) as invalid:
                await wrong.list_catalogs()
            assert (await anonymous.health()).status == "ok"

    assert result.names[0] == "search_flights"
    assert [c.namespace for c in listed] == ["travel"]
    assert (denied.value.status_code, denied.value.error) == (403, "Forbidden")
    assert (missing.value.status_code, missing.value.error) == (401, "Unauthorized")
    assert invalid.value.detail == "the API key is not valid"


async def test_router_mcp_through_a_keyed_router(serve: Callable[..., Any]) -> None:
    async with keyed(serve) as served:
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=served.app), base_url="http://test")
        async with http:
            travel = RemoteBackend("http://test", api_key=TRAVEL, client=http)
            await travel.start()
            found = await travel.route("travel", "Find me a flight from Lisbon to Rome", max_functions=2)
            with pytest.raises(Forbidden, match="may not use namespace 'devops'"):
                await travel.route("devops", "restart the web service", max_functions=2)
            with pytest.raises(Unauthorized, match="an API key is required: set ROUTER_API_KEY or --api-key"):
                await RemoteBackend("http://test", client=http).start()
            with pytest.raises(Unauthorized, match="refused the request: an API key is not valid"):
                await RemoteBackend("http://test", api_key=WRONG, client=http).start()
            with pytest.raises(Forbidden, match=r"refused the request: .* may not use namespace 'devops'"):
                await RemoteBackend("http://test", api_key=TRAVEL, namespaces=["travel", "devops"], client=http).start()
            await RemoteBackend("http://test", api_key=TRAVEL, namespaces=["travel"], client=http).start()

    assert found[0].name == "search_flights"
