"""Operators read and delete a namespace's usage examples through HTTP and the client."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from router.api.keys import AuthSettings
from router.client import AsyncRouterClient, NotFoundError
from tests.conftest import Served, bare

pytestmark = pytest.mark.integration

EMAIL = bare("send_email", "Send an email message.", to="Recipient", body="Text")
SLACK = bare("post_slack_message", "Post a message to a chat channel.", channel="Channel", text="Text")
WEATHER = bare("get_weather", "Current weather for a city.", city="City")
ADMIN = "admin-5c1e9a7f3b2d4e6a8c0f"
OPS = "ops-1a3c5e7f9b2d4f6a8c0e"
OTHER = "other-8e6c4a2f0d1b3e5c7a9f"
RUNS = [
    ("give the crew a heads-up about the maintenance window", ["send_email"]),
    ("tell the channel the deploy is done", ["post_slack_message"]),
    ("email the invoice for March to accounting", ["send_email"]),
    ("remind everyone of the outage and post it in the chat", ["send_email", "post_slack_message"]),
]


def run(text: str, names: list[str]) -> list[dict[str, Any]]:
    tool_calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": "{}"}} for i, n in enumerate(names)
    ]
    results = [{"role": "tool", "tool_call_id": f"c{i}", "content": "done"} for i in range(len(names))]
    return [
        {"role": "user", "content": text},
        {"role": "assistant", "content": None, "tool_calls": tool_calls},
        *results,
    ]


def auth(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


async def learned(client: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    response = await client.get("/v1/catalogs/ops/examples", params=params, headers=auth(ADMIN))
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


@pytest.fixture
async def ops(serve: Callable[..., Any]) -> Any:
    keys = AuthSettings(api_keys=json.dumps({ADMIN: "*", OPS: ["ops"], OTHER: ["other"]}))
    async with serve(auth=keys) as served:
        response = await served.client.put(
            "/v1/catalogs/ops", json={"functions": [EMAIL, SLACK, WEATHER]}, headers=auth(ADMIN)
        )
        assert response.status_code == 200, response.text
        for number, (text, names) in enumerate(RUNS):
            body = {"namespace": "ops", "messages": run(text, names)}
            response = await served.client.post(f"/v1/sessions/r{number}/messages", json=body, headers=auth(OPS))
            assert response.status_code == 200, response.text
        yield served


async def test_examples_are_listed_paged_and_filtered(ops: Served) -> None:
    everything = await learned(ops.client)
    assert [(e["function"], e["request"]) for e in everything["examples"]][:3] == [
        ("send_email", RUNS[0][0]),
        ("post_slack_message", RUNS[1][0]),
        ("send_email", RUNS[2][0]),
    ]
    assert len(everything["examples"]) == 5  # the last run taught both of its functions
    together = {e["function"]: e["called_with"] for e in everything["examples"][3:]}
    assert together == {"send_email": ["post_slack_message"], "post_slack_message": ["send_email"]}
    assert everything["examples"][0]["called_with"] == []
    assert everything["next_cursor"] is None
    assert all(e["stored_at"] > 1.7e9 for e in everything["examples"])

    first = await learned(ops.client, limit=2)
    second = await learned(ops.client, limit=2, cursor=first["next_cursor"])
    third = await learned(ops.client, limit=2, cursor=second["next_cursor"])
    assert [e["id"] for e in first["examples"] + second["examples"] + third["examples"]] == [
        e["id"] for e in everything["examples"]
    ]
    assert third["next_cursor"] is None

    emails = await learned(ops.client, function="send_email")
    assert {e["function"] for e in emails["examples"]} == {"send_email"}
    assert len(emails["examples"]) == 3


async def test_deleting_one_example_then_one_function_then_all(ops: Served) -> None:
    examples = (await learned(ops.client))["examples"]
    path = f"/v1/catalogs/ops/examples/{examples[0]['id']}"
    deleted = await ops.client.delete(path, headers=auth(OPS))
    again = await ops.client.delete(path, headers=auth(OPS))
    assert deleted.json() == {"namespace": "ops", "deleted": 1}
    assert again.status_code == 404
    assert again.json()["detail"].startswith("example_id:")
    assert examples[0]["id"] not in [e["id"] for e in (await learned(ops.client))["examples"]]

    slack = await ops.client.delete(
        "/v1/catalogs/ops/examples", params={"function": "post_slack_message"}, headers=auth(OPS)
    )
    assert slack.json() == {"namespace": "ops", "deleted": 2}
    store = ops.runtime.service.index.store
    assert store.companions.count("ops") == 0  # the run that called it with send_email is gone too

    # A function the catalog does not hold is a typo, not one that taught nothing: 404 naming the field.
    for method in ("GET", "DELETE"):
        typo = await ops.client.request(
            method, "/v1/catalogs/ops/examples", params={"function": "send_emial"}, headers=auth(OPS)
        )
        assert typo.status_code == 404, typo.text
        assert typo.json()["detail"].startswith("function:")

    rest = await ops.client.delete("/v1/catalogs/ops/examples", headers=auth(OPS))
    assert rest.json() == {"namespace": "ops", "deleted": 2}
    assert (await learned(ops.client))["examples"] == []


async def test_deleting_all_examples_resets_the_companions(ops: Served) -> None:
    store = ops.runtime.service.index.store
    assert store.companions.count("ops") == 1
    await ops.client.delete("/v1/catalogs/ops/examples", headers=auth(ADMIN))
    assert store.companions.count("ops") == 0


async def test_a_key_for_another_namespace_may_neither_read_nor_delete(ops: Served) -> None:
    listed = await ops.client.get("/v1/catalogs/ops/examples", headers=auth(OTHER))
    deleted = await ops.client.delete("/v1/catalogs/ops/examples", headers=auth(OTHER))
    assert (listed.status_code, deleted.status_code) == (403, 403)
    assert len((await learned(ops.client))["examples"]) == 5
    bad = await ops.client.get("/v1/catalogs/ops/examples", params={"limit": 0}, headers=auth(ADMIN))
    assert bad.status_code == 422
    assert "limit" in bad.text
    garbage = await ops.client.get("/v1/catalogs/ops/examples", params={"cursor": "garbage"}, headers=auth(ADMIN))
    assert garbage.status_code == 422
    assert garbage.json()["detail"].startswith("cursor: ")
    assert "next_cursor" in garbage.json()["detail"]
    for method in ("GET", "DELETE"):
        unknown = await ops.client.request(method, "/v1/catalogs/nope/examples", headers=auth(ADMIN))
        assert unknown.status_code == 404, unknown.text
        assert unknown.json()["error"] == "NamespaceNotFound"


async def test_the_client_lists_and_deletes_examples(ops: Served) -> None:
    transport = httpx.ASGITransport(app=ops.app)
    async with AsyncRouterClient("http://test", api_key=OPS, transport=transport) as client:
        first = await client.list_examples("ops", limit=3)
        rest = await client.list_examples("ops", cursor=first.next_cursor)
        emails = await client.list_examples("ops", function="send_email")
        one = await client.delete_example("ops", first.examples[0].id)
        with pytest.raises(NotFoundError):
            await client.delete_example("ops", first.examples[0].id)
        cleared = await client.delete_examples("ops", function="send_email")
        left = await client.list_examples("ops")

    assert len(first.examples) == 3
    assert first.next_cursor is not None
    assert len(rest.examples) == 2
    assert rest.next_cursor is None
    assert {e.function for e in emails.examples} == {"send_email"}
    assert first.examples[0].request == RUNS[0][0]
    assert {e.called_with for e in rest.examples} == {("post_slack_message",), ("send_email",)}
    assert one.deleted == 1
    assert cleared.deleted == 2  # the first one was deleted already
    assert {e.function for e in left.examples} == {"post_slack_message"}
