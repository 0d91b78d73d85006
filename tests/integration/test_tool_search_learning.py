"""A function found by a model's search and then called is learned like a routed one, whether the
run is stored as OpenAI Responses items or as Anthropic messages (checked against the SDKs' types)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from anthropic.types import MessageParam
from openai.types.responses import ResponseInputItemParam

from router.retrieval.learning import called_functions, usage_examples
from tests.conftest import Served
from tests.integration.test_usage_learning import ASKED, CATALOG, LATER, ranking, user
from tests.sdk_types import conforms

pytestmark = pytest.mark.integration


@pytest.fixture
async def ops(serve: Callable[..., Any]) -> AsyncIterator[Served]:
    async with serve() as served:
        response = await served.client.put("/v1/catalogs/ops", json={"functions": CATALOG})
        assert response.status_code == 200
        yield served


async def search(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await client.post("/v1/tool_search", json={"namespace": "ops", "query": "tell the crew", **body})
    assert response.status_code == 200, response.text
    return dict(response.json())


async def store(client: httpx.AsyncClient, session: str, messages: list[dict[str, Any]]) -> None:
    response = await client.post(f"/v1/sessions/{session}/messages", json={"namespace": "ops", "messages": messages})
    assert response.status_code == 200, response.text


def learned(served: Served, name: str) -> list[str]:
    examples = served.runtime.service.index.store.examples
    return list(examples.texts("ops", name))


async def test_a_responses_run_with_a_tool_search_teaches_the_function_called(ops: Served) -> None:
    before = await ranking(ops.client, LATER)
    output = (await search(ops.client, format="openai", call_id="ts_1", max_functions=5))["item"]
    run: list[dict[str, Any]] = [
        {"role": "user", "content": ASKED},
        {"type": "tool_search_call", "execution": "client", "call_id": "ts_1", "arguments": {"query": "tell the crew"}},
        output,
        {"type": "function_call", "call_id": "fc_1", "name": "send_email", "arguments": '{"to": "crew"}'},
        {"type": "function_call_output", "call_id": "fc_1", "output": "sent"},
    ]
    for item in run:
        conforms(ResponseInputItemParam, item)
    await store(ops.client, "responses-run", run)

    assert learned(ops, "send_email") == [ASKED]
    assert before.index("send_email") >= 2
    assert (await ranking(ops.client, LATER))[0] == "send_email"
    assert (await search(ops.client, query=LATER))["functions"][0]["name"] == "send_email"
    stored = (await ops.client.get("/v1/sessions/responses-run/messages")).json()["messages"]
    assert [m.get("type", m.get("role")) for m in stored] == [
        "user",
        "tool_search_call",
        "tool_search_output",
        "function_call",
        "function_call_output",
    ]
    assert "role" not in stored[1]
    assert stored[2]["tools"] == output["tools"]


async def test_an_anthropic_run_with_tool_references_teaches_the_function_called(ops: Served) -> None:
    result = (await search(ops.client, format="anthropic", call_id="toolu_1", max_functions=5))["item"]
    run: list[dict[str, Any]] = [
        {"role": "user", "content": ASKED},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "tool_search", "input": {"query": "tell the crew"}}
        ]},
        {"role": "user", "content": [result]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_2", "name": "send_email", "input": {"to": "crew", "body": "hi"}}
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "sent"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Done: the crew knows."}]},
    ]  # fmt: skip
    for message in run:
        conforms(MessageParam, message)
    assert any(block["type"] == "tool_reference" for block in result["content"])
    await store(ops.client, "anthropic-run", run)

    assert learned(ops, "send_email") == [ASKED]
    assert learned(ops, "tool_search") == []
    assert (await ranking(ops.client, LATER))[0] == "send_email"


def test_reading_calls_from_items_and_tool_results() -> None:
    assert called_functions({"type": "function_call", "call_id": "c", "name": "send_email", "arguments": "{}"}) == [
        "send_email"
    ]
    assert called_functions({"type": "tool_search_call", "call_id": "c", "arguments": {"query": "x"}}) == []
    results = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "u", "name": "page_oncall", "input": {}}]}
    examples = usage_examples([user(ASKED), call, results, call], roles=["user"])
    assert [(e.name, e.text) for e in examples] == [("page_oncall", ASKED)]


async def test_an_item_needs_a_role_or_a_type(ops: Served) -> None:
    response = await ops.client.post("/v1/sessions/x/messages", json={"messages": [{"content": "hello"}]})
    assert response.status_code == 422
    assert response.json()["detail"] == "messages[0].role: Field required"
