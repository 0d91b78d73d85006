"""No silent drops, with the real model over HTTP: a route of a catalog that has functions answers
some unless ``min_score`` says why not, and tool lists keep to each API's documented limits."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from router.embedding import EmbedderPool
from tests.conftest import Served, bare, run_app

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
