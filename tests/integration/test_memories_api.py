"""``/v1/users/{user_id}/memories`` over HTTP with API keys: list, forget one, forget all.

The app runs with its lifespan, the real model and embedded storage, over the example
catalog, with one key for every namespace and two limited ones.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from router.api.keys import AuthSettings
from tests.conftest import EXAMPLES, Served

pytestmark = pytest.mark.integration

ADMIN = "admin-7f3a9c1e5b2d4f6a8c0e"
TRAVEL = "travel-2b4d6f8a0c1e3a5c7e9b"
DEVOPS = "devops-9e7c5a3f1d2b4c6e8a0f"
KEYS = {ADMIN: "*", TRAVEL: ["travel"], DEVOPS: ["devops"]}


@asynccontextmanager
async def keyed(serve: Callable[..., Any]) -> AsyncIterator[Served]:
    async with serve(catalog=EXAMPLES, auth=AuthSettings(api_keys=json.dumps(KEYS))) as served:
        yield served


async def call(served: Served, method: str, path: str, body: Any = None, *, key: str | None) -> httpx.Response:
    headers = {"authorization": f"Bearer {key}"} if key is not None else {}
    return await served.client.request(method, path, json=body, headers=headers, params=None)


async def say(served: Served, session: str, text: str, *, key: str, **fields: Any) -> None:
    body = {"messages": [{"role": "user", "content": text}], **fields}
    response = await call(served, "POST", f"/v1/sessions/{session}/messages", body, key=key)
    assert response.status_code == 200, response.text
    assert response.json()["memories_added"] == 1, text


async def listed(served: Served, user: str, *, key: str = ADMIN, **params: str) -> list[dict[str, Any]]:
    response = await served.client.get(
        f"/v1/users/{user}/memories", params=params, headers={"authorization": f"Bearer {key}"}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["user_id"] == user
    return list(body["memories"])


async def test_a_users_memories_are_listed_with_where_and_when_they_were_said(serve: Callable[..., Any]) -> None:
    async with keyed(serve) as served:
        started = time.time()
        await say(served, "trip", "I prefer aisle seats.", key=TRAVEL, user_id="ana", namespace="travel")
        await say(served, "ops", "Our production cluster is prod-eu-1.", key=DEVOPS, user_id="ana", namespace="devops")
        await say(served, "any", "My name is Ana Silva.", key=ADMIN, user_id="ana")
        await say(served, "alone", "I live in Porto.", key=ADMIN, namespace="travel")  # a session's, not ana's

        memories = await listed(served, "ana")
        assert [(m["text"], m["namespace"], m["session_id"]) for m in memories] == [
            ("I prefer aisle seats.", "travel", "trip"),
            ("Our production cluster is prod-eu-1.", "devops", "ops"),
            ("My name is Ana Silva.", "*", "any"),
        ]
        fields = {"id", "text", "namespace", "created_at", "session_id", "expires_at", "superseded_by"}
        assert all(set(m) == {*fields, "status", "replaced_in"} for m in memories)
        assert {(m["status"], m["expires_at"], m["superseded_by"]) for m in memories} == {("current", None, None)}
        assert all(started <= m["created_at"] <= time.time() for m in memories)
        assert len({m["id"] for m in memories}) == 3
        assert [m["text"] for m in await listed(served, "ana", namespace="devops")] == [
            "Our production cluster is prod-eu-1."
        ]
        assert await listed(served, "nobody") == []


async def test_limited_keys_reach_only_their_namespaces_memories_of_a_user(serve: Callable[..., Any]) -> None:
    async with keyed(serve) as served:
        await say(served, "t1", "I prefer window seats.", key=TRAVEL, user_id="tom", namespace="travel")
        await say(served, "a1", "I prefer aisle seats.", key=TRAVEL, user_id="ana", namespace="travel")
        await say(served, "a2", "Our production cluster is prod-eu-1.", key=DEVOPS, user_id="ana", namespace="devops")
        await say(served, "a3", "My name is Ana Silva.", key=ADMIN, user_id="ana")

        base = "/v1/users/ana/memories"
        for method, path in (("GET", base), ("DELETE", base), ("DELETE", f"{base}/whatever")):
            refused = await call(served, method, path, key=None)
            assert refused.status_code == 401, (method, path)
            assert set(refused.json()) == {"error", "detail", "request_id"}
        # What another tenant keeps of the same user id neither shows nor locks a key out.
        assert [m["text"] for m in await listed(served, "ana", key=TRAVEL)] == ["I prefer aisle seats."]
        devops = await listed(served, "ana", key=DEVOPS)
        assert [m["text"] for m in devops] == ["Our production cluster is prod-eu-1."]
        assert await listed(served, "tom", key=DEVOPS) == []
        other = await served.client.get(
            base, params={"namespace": "devops"}, headers={"authorization": f"Bearer {TRAVEL}"}
        )
        assert other.status_code == 403
        assert "namespace" in other.json()["detail"]

        gone = await call(served, "DELETE", f"{base}/{devops[0]['id']}", key=TRAVEL)
        assert gone.status_code == 404, "another tenant's memory is not the key's to delete"
        forgotten = await call(served, "DELETE", base, key=TRAVEL)
        assert forgotten.json() == {"user_id": "ana", "deleted": 1}
        assert [m["text"] for m in await listed(served, "ana")] == [
            "Our production cluster is prod-eu-1.",
            "My name is Ana Silva.",
        ]


async def test_one_memory_is_forgotten_then_all_of_them(serve: Callable[..., Any]) -> None:
    async with keyed(serve) as served:
        for session, text in (("s1", "I am vegetarian."), ("s2", "I prefer aisle seats."), ("s3", "I live in Porto.")):
            await say(served, session, text, key=TRAVEL, user_id="eve", namespace="travel")
        await say(served, "z", "I live in Lyon.", key=TRAVEL, user_id="zoe", namespace="travel")
        memories = await listed(served, "eve", key=TRAVEL)
        first = memories[0]["id"]

        deleted = await call(served, "DELETE", f"/v1/users/eve/memories/{first}", key=TRAVEL)
        assert deleted.status_code == 200, deleted.text
        assert deleted.json() == {"user_id": "eve", "deleted": 1}
        assert [m["text"] for m in await listed(served, "eve")] == ["I prefer aisle seats.", "I live in Porto."]
        again = await call(served, "DELETE", f"/v1/users/eve/memories/{first}", key=TRAVEL)
        assert again.status_code == 404
        assert set(again.json()) == {"error", "detail", "request_id"}
        zoes = (await listed(served, "zoe"))[0]["id"]
        not_hers = await call(served, "DELETE", f"/v1/users/eve/memories/{zoes}", key=ADMIN)
        assert not_hers.status_code == 404, "a memory of another user is not found through this one"
        assert (await call(served, "DELETE", "/v1/users/eve/memories/not-an-id", key=ADMIN)).status_code == 404

        route = {"namespace": "travel", "user_id": "eve", "messages": [{"role": "user", "content": "Any veggie food?"}]}
        answer = await call(served, "POST", "/v1/route", route, key=TRAVEL)
        assert "I am vegetarian." not in [m["text"] for m in answer.json()["memories"]]

        everything = await call(served, "DELETE", "/v1/users/eve/memories", key=TRAVEL)
        assert everything.json() == {"user_id": "eve", "deleted": 2}
        assert await listed(served, "eve") == []
        route["messages"] = [{"role": "user", "content": "Where do I live? Which seat do I like?"}]
        assert (await call(served, "POST", "/v1/route", route, key=TRAVEL)).json()["memories"] == []
        assert [m["text"] for m in await listed(served, "zoe")] == ["I live in Lyon."], "other users keep theirs"
        nothing = await call(served, "DELETE", "/v1/users/eve/memories", key=TRAVEL)
        assert nothing.json() == {"user_id": "eve", "deleted": 0}


async def test_a_key_deleting_a_session_leaves_other_namespaces_route_records(serve: Callable[..., Any]) -> None:
    asked = {"role": "user", "content": "Find me a flight from Lisbon to Rome on Friday"}
    async with keyed(serve) as served:
        route = {"namespace": "travel", "session_id": "routed", "messages": [asked]}
        assert (await call(served, "POST", "/v1/route", route, key=TRAVEL)).status_code == 200
        # A session only routed so far holds no message: any key may delete it, but not another's route records.
        deleted = await call(served, "DELETE", "/v1/sessions/routed", key=DEVOPS)
        assert deleted.json() == {"session_id": "routed", "deleted": 0}
        call_made = {"id": "c1", "type": "function", "function": {"name": "search_flights", "arguments": "{}"}}
        run = [asked, {"role": "assistant", "content": None, "tool_calls": [call_made]}]
        posted = await call(
            served, "POST", "/v1/sessions/routed/messages", {"namespace": "travel", "messages": run}, key=TRAVEL
        )
        assert posted.status_code == 200, posted.text
        misses = (await call(served, "GET", "/v1/catalogs/travel/misses", key=TRAVEL)).json()
        assert (misses["checked"], misses["counts"]["routed"]) == (1, 1)


async def test_the_memories_of_one_namespace_are_forgotten_alone(serve: Callable[..., Any]) -> None:
    async with keyed(serve) as served:
        await say(served, "a1", "I prefer aisle seats.", key=ADMIN, user_id="ivy", namespace="travel")
        await say(served, "a2", "Our production cluster is prod-eu-1.", key=ADMIN, user_id="ivy", namespace="devops")
        await say(served, "a3", "My name is Ivy Chen.", key=ADMIN, user_id="ivy")

        outside = await served.client.delete(
            "/v1/users/ivy/memories", params={"namespace": "devops"}, headers={"authorization": f"Bearer {TRAVEL}"}
        )
        assert outside.status_code == 403
        one = await served.client.delete(
            "/v1/users/ivy/memories", params={"namespace": "travel"}, headers={"authorization": f"Bearer {ADMIN}"}
        )
        assert one.json() == {"user_id": "ivy", "deleted": 1}
        assert [m["text"] for m in await listed(served, "ivy")] == [
            "Our production cluster is prod-eu-1.",
            "My name is Ivy Chen.",
        ]
        # "*", as the list shows it: the memories stored without a namespace, for keys of every namespace.
        admin, travel = ({"authorization": f"Bearer {key}"} for key in (ADMIN, TRAVEL))
        shared = await served.client.get("/v1/users/ivy/memories", params={"namespace": "*"}, headers=admin)
        assert [m["text"] for m in shared.json()["memories"]] == ["My name is Ivy Chen."]
        params = {"namespace": "*"}
        assert (await served.client.delete("/v1/users/ivy/memories", params=params, headers=travel)).status_code == 403
        gone = await served.client.delete("/v1/users/ivy/memories", params=params, headers=admin)
        assert gone.json() == {"user_id": "ivy", "deleted": 1}
        assert [m["text"] for m in await listed(served, "ivy")] == ["Our production cluster is prod-eu-1."]


async def remembered(served: Served, user: str, namespace: str, text: str, *, key: str) -> list[str]:
    body = {"namespace": namespace, "user_id": user, "messages": [{"role": "user", "content": text}]}
    response = await call(served, "POST", "/v1/route", body, key=key)
    assert response.status_code == 200, response.text
    return [m["text"] for m in response.json()["memories"]]


async def test_a_tenant_updates_and_forgets_shared_memories_for_itself_alone(serve: Callable[..., Any]) -> None:
    async with keyed(serve) as served:
        await say(served, "c0", "I live in Porto.", key=ADMIN, user_id="carol")
        await say(served, "c1", "I am vegetarian.", key=ADMIN, user_id="carol")
        await say(served, "c2", "We moved to Lisbon last month.", key=TRAVEL, user_id="carol", namespace="travel")
        forgot = await call(
            served,
            "POST",
            "/v1/sessions/c3/messages",
            {
                "namespace": "travel",
                "user_id": "carol",
                "messages": [{"role": "user", "content": "Forget that I am vegetarian."}],
            },
            key=TRAVEL,
        )
        assert forgot.json()["memories_forgotten"] == 1
        question = "Where do I live, and what do I eat? Find me a restaurant near home."
        # In travel, the update and the forget hold; devops keeps what it was told.
        assert await remembered(served, "carol", "travel", question, key=TRAVEL) == ["We moved to Lisbon last month."]
        kept = await remembered(served, "carol", "devops", question, key=DEVOPS)
        assert set(kept) == {"I live in Porto.", "I am vegetarian."}
        shared = {m["text"]: m for m in await listed(served, "carol", namespace="*")}
        assert {text: m["replaced_in"] for text, m in shared.items()} == {
            "I live in Porto.": ["travel"],
            "I am vegetarian.": ["travel"],
        }
