"""No silent drops, with the real model over HTTP: a route of a catalog that has functions answers
some unless ``min_score`` says why not, and tool lists keep to each API's documented limits."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from anthropic.types import ToolResultBlockParam, ToolUnionParam
from openai.types.responses import ToolParam

from router.embedding import EmbedderPool
from router.tools.limits import MAX_DEFERRED
from tests.conftest import Served, bare, run_app
from tests.sdk_types import conforms

pytestmark = pytest.mark.integration

CITIES = [f"city{i:02d}" for i in range(25)]
FORECASTS = [bare(f"forecast_{c}", f"Weather forecast for {c}: rain, wind and temperature.") for c in CITIES]
OTHERS = [
    bare("transfer_money", "Send money from one bank account to another.", amount="how much"),
    bare("book_table", "Reserve a table at a restaurant.", restaurant="where"),
    bare("send_email", "Send an email message to a contact.", to="recipient"),
    bare("translate_text", "Translate a text into another language.", text="the text"),
]


@pytest.fixture(scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory, embedders: EmbedderPool) -> AsyncIterator[Served]:
    async with run_app(data=tmp_path_factory.mktemp("drops") / "data", pool=embedders) as app:
        response = await app.client.put("/v1/catalogs/weather", json={"functions": [*FORECASTS, *OTHERS]})
        assert response.status_code == 200, response.text
        yield app


async def route(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    body.setdefault("messages", [{"role": "user", "content": "What is the weather forecast, rain or wind?"}])
    response = await client.post("/v1/route", json={"namespace": "weather", **body})
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_a_route_whose_nearest_functions_are_all_pinned_still_routes_others(served: Served) -> None:
    pinned = [f["name"] for f in FORECASTS]
    answer = await route(served.client, pinned=pinned, max_functions=3)
    routed = [f["name"] for f in answer["functions"] if not f["pinned"]]
    assert len(routed) == 3
    assert set(routed) <= {f["name"] for f in OTHERS}
    assert answer["below_min_score"] == 0


async def test_a_min_score_that_removes_everything_says_so(served: Served) -> None:
    answer = await route(served.client, min_score=0.99, max_functions=3)
    assert answer["functions"] == []
    assert answer["below_min_score"] == 3
    some = await route(served.client, min_score=-1.0, max_functions=2)
    assert len(some["functions"]) == 2
    assert some["below_min_score"] == 0


async def test_a_search_whose_nearest_functions_are_pinned_still_finds_others(served: Served) -> None:
    response = await served.client.put(
        "/v1/catalogs/pinned", json={"functions": [*FORECASTS, *OTHERS], "pinned": [f["name"] for f in FORECASTS]}
    )
    assert response.status_code == 200, response.text
    body = {"namespace": "pinned", "query": "weather forecast with rain and wind", "format": "plain"}
    found = (await served.client.post("/v1/tool_search", json=body)).json()
    assert len(found["functions"]) == 3
    assert {f["name"] for f in found["functions"]} <= {f["name"] for f in OTHERS}


FILES = [
    bare("files.read", "Read the content of a file from the disk.", path="file path"),
    bare("files_write", "Write text into a file on the disk.", path="file path"),
    bare("list_directory", "List the files of a directory.", path="directory path"),
]


async def test_names_the_apis_refuse_are_left_out_of_their_shapes_and_named(served: Served) -> None:
    response = await served.client.put("/v1/catalogs/files", json={"functions": FILES})
    assert response.status_code == 200, response.text
    reason = "^[a-zA-Z0-9_-]{1,64}$"
    for format, kind in (("openai", ToolParam), ("anthropic", ToolUnionParam)):
        listed = (await served.client.get("/v1/catalogs/files/tools", params={"format": format})).json()
        assert [t.get("name") for t in listed["tools"]][1:] == ["files_write", "list_directory"]
        for tool in listed["tools"]:
            conforms(kind, tool)
        assert [f["name"] for f in listed["left_out"]] == ["files.read"]
        assert reason in listed["left_out"][0]["reason"]

    body = {"namespace": "files", "query": "read the content of a file", "max_functions": 1, "call_id": "c1"}
    found = (await served.client.post("/v1/tool_search", json={**body, "format": "openai"})).json()
    assert [t["name"] for t in found["item"]["tools"]] == [f["name"] for f in found["functions"]] != ["files.read"]
    assert [f["name"] for f in found["left_out"]] == ["files.read"]
    mcp = (await served.client.post("/v1/tool_search", json={**body, "format": "mcp"})).json()
    assert [t["name"] for t in mcp["item"]["tools"]] == ["files.read"]
    assert mcp["left_out"] == []

    routed = (
        await served.client.post(
            "/v1/route",
            json={"namespace": "files", "messages": [{"role": "user", "content": "read the file notes.txt"}]},
        )
    ).json()
    assert "files.read" in [f["name"] for f in routed["functions"]]
    assert "files.read" not in [t["function"]["name"] for t in routed["tools"]]
    assert len(routed["tools"]) == len(routed["functions"]) - 1
    assert [f["name"] for f in routed["left_out"]] == ["files.read"]


async def test_a_catalog_missing_from_the_index_served_answers_503_not_an_empty_route(served: Served) -> None:
    response = await served.client.put("/v1/catalogs/lagging", json={"functions": OTHERS})
    assert response.status_code == 200, response.text
    # As when another process switched generations or wrote there: the record counts functions
    # that the index this process serves does not hold.
    store = served.runtime.catalogs.index.store
    await asyncio.to_thread(store.remove, "lagging", [f["name"] for f in OTHERS])
    messages = [{"role": "user", "content": "send some money to my sister"}]
    answer = await served.client.post("/v1/route", json={"namespace": "lagging", "messages": messages})
    assert answer.status_code == 503, answer.text
    assert "'lagging' holds 4 functions" in answer.json()["detail"]
    search = {"namespace": "lagging", "query": "send money", "format": "plain"}
    assert (await served.client.post("/v1/tool_search", json=search)).status_code == 503


async def test_past_anthropics_count_the_list_and_the_search_leave_out_the_same_functions(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    response = await served.client.put("/v1/catalogs/capped", json={"functions": OTHERS, "pinned": ["send_email"]})
    assert response.status_code == 200, response.text
    monkeypatch.setitem(MAX_DEFERRED, "anthropic", 2)  # 10,000 in truth: a catalog that large takes minutes to embed
    listed = (await served.client.get("/v1/catalogs/capped/tools", params={"format": "anthropic"})).json()
    assert [(t["name"], t.get("defer_loading", False)) for t in listed["tools"]] == [
        ("tool_search", False),
        ("send_email", False),
        ("book_table", True),
        ("transfer_money", True),
    ]
    assert [f["name"] for f in listed["left_out"]] == ["translate_text"]
    loaded = await served.client.get(
        "/v1/catalogs/capped/tools", params={"format": "anthropic", "load": "translate_text"}
    )
    assert [t["name"] for t in loaded.json()["tools"]][1:3] == ["send_email", "translate_text"]

    body = {"namespace": "capped", "query": "translate this text into French", "max_functions": 1, "call_id": "t1"}
    found = (await served.client.post("/v1/tool_search", json={**body, "format": "anthropic"})).json()
    conforms(ToolResultBlockParam, found["item"])
    assert "translate_text" not in json.dumps(found["item"])
    assert [f["name"] for f in found["left_out"]] == ["translate_text"]
    openai = (await served.client.post("/v1/tool_search", json={**body, "format": "openai"})).json()
    assert [f["name"] for f in openai["functions"]] == ["translate_text"]
