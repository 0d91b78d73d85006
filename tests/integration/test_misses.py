"""Misses in production: each call of a stored run is checked against what its session's turn was routed."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from router.client import AsyncRouterClient, MissedFunction, NotFoundError, OutcomeCounts
from router.sessions.routes import RouteLog, RouteRecord
from tests.conftest import Served
from tests.integration.test_usage_learning import CATALOG, answered, calls, user

pytestmark = pytest.mark.integration

WEATHER = "what is the weather like in Lisbon today"
TICKET = "open a ticket in the tracker"


@pytest.fixture
async def ops(serve: Callable[..., Any]) -> AsyncIterator[Served]:
    async with serve() as served:
        response = await served.client.put("/v1/catalogs/ops", json={"functions": CATALOG})
        assert response.status_code == 200
        yield served


async def post(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post(path, json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def misses(client: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    response = await client.get("/v1/catalogs/ops/misses", params=params)
    assert response.status_code == 200, response.text
    return dict(response.json())


def counter(text: str, outcome: str) -> float:
    line = f'router_calls_total{{namespace="ops",outcome="{outcome}"}} '
    found = [row for row in text.splitlines() if row.startswith(line)]
    return float(found[0].split()[-1]) if found else 0.0


async def routed_then_run(client: httpx.AsyncClient, session: str) -> tuple[list[str], list[str]]:
    """Route a turn and search once in ``session``, then store a run calling one routed, one found, one missed.

    The run also calls ``run_python``, an agent's own tool the catalog does not hold: it is not checked.
    """
    body = {"namespace": "ops", "session_id": session, "messages": [user(WEATHER)], "max_functions": 1}
    routed = [f["name"] for f in (await post(client, "/v1/route", body))["functions"]]
    search = {"namespace": "ops", "session_id": session, "query": TICKET, "max_functions": 1, "format": "plain"}
    found = [f["name"] for f in (await post(client, "/v1/tool_search", search))["functions"]]
    assert routed == ["get_weather"]
    assert found == ["create_jira_issue"]
    run = [user(WEATHER), *answered("get_weather", "create_jira_issue", "page_oncall", "run_python", content="ok")]
    await post(client, f"/v1/sessions/{session}/messages", {"namespace": "ops", "messages": run})
    return routed, found


async def test_a_stored_run_counts_routed_searched_and_missed_calls(ops: Served) -> None:
    client = ops.client
    assert (await misses(client))["miss_rate"] is None
    await routed_then_run(client, "s-1")

    shown = await misses(client)
    assert shown["counts"] == {"routed": 1, "searched": 1, "missed": 1}
    assert (shown["checked"], shown["miss_rate"]) == (3, pytest.approx(1 / 3))
    assert shown["most_missed"] == [{"name": "page_oncall", "misses": 1}]
    [latest] = shown["latest"]
    assert (latest["function"], latest["session_id"], latest["request"]) == ("page_oncall", "s-1", WEATHER)
    assert latest["routed"] == ["get_weather"]

    text = (await client.get("/metrics")).text
    assert [counter(text, o) for o in ("routed", "searched", "missed", "unchecked")] == [1, 1, 1, 0]

    # The miss teaches its function like any call.
    examples = ops.runtime.service.index.store.examples
    assert examples.texts("ops", "page_oncall") == [WEATHER]


async def test_a_route_does_not_wait_for_its_record_but_a_run_stored_at_once_does(
    ops: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    write = RouteLog.add
    held = threading.Event()

    def slow(log: RouteLog, record: RouteRecord) -> None:
        held.wait(30.0)  # the record's write is held until the route has answered
        write(log, record)

    monkeypatch.setattr(RouteLog, "add", slow)
    body = {"namespace": "ops", "session_id": "s-4", "messages": [user(WEATHER)], "max_functions": 1}
    # A route that waited for its record would wait for the held write, past this bound.
    await asyncio.wait_for(post(ops.client, "/v1/route", body), timeout=15.0)
    held.set()
    run = {"namespace": "ops", "messages": [user(WEATHER), calls("get_weather")]}
    await post(ops.client, "/v1/sessions/s-4/messages", run)
    assert (await misses(ops.client))["counts"]["routed"] == 1


async def test_calls_of_a_session_never_routed_are_unchecked(ops: Served) -> None:
    await post(ops.client, "/v1/route", {"namespace": "ops", "messages": [user(WEATHER)]})
    run = {"namespace": "ops", "messages": [user(WEATHER), calls("page_oncall")]}
    await post(ops.client, "/v1/sessions/no-route/messages", run)
    assert (await misses(ops.client))["checked"] == 0
    assert counter((await ops.client.get("/metrics")).text, "unchecked") == 1


async def test_a_run_posted_again_is_counted_once_in_storage(ops: Served) -> None:
    await routed_then_run(ops.client, "s-2")
    run = [user(WEATHER), {**calls("page_oncall"), "id": "m-1"}]
    for _ in range(2):
        await post(ops.client, "/v1/sessions/s-2/messages", {"namespace": "ops", "messages": run})
    assert (await misses(ops.client))["counts"]["missed"] == 2


async def test_misses_survive_a_restart_and_go_with_their_session(serve: Callable[..., Any], tmp_path: Path) -> None:
    async with serve() as served:
        await served.client.put("/v1/catalogs/ops", json={"functions": CATALOG})
        await routed_then_run(served.client, "s-3")
    async with serve() as served:
        assert (await misses(served.client, limit=1))["counts"]["missed"] == 1
        assert (await served.client.delete("/v1/sessions/s-3")).status_code == 200
        shown = await misses(served.client)
        assert (shown["checked"], shown["latest"], shown["most_missed"]) == (0, [], [])


async def test_bad_misses_requests_say_what_is_wrong(ops: Served) -> None:
    response = await ops.client.get("/v1/catalogs/ops/misses", params={"limit": 101})
    assert response.status_code == 422
    assert response.json()["detail"].startswith("limit:")
    response = await ops.client.get("/v1/catalogs/nowhere/misses")
    assert response.status_code == 404
    assert response.json()["error"] == "NamespaceNotFound"


async def test_the_client_reads_the_misses(ops: Served) -> None:
    transport = httpx.ASGITransport(app=ops.app)
    async with AsyncRouterClient("http://test", transport=transport) as client:
        before = await client.misses("ops")
        await routed_then_run(ops.client, "s-5")
        again = {"namespace": "ops", "messages": [user(WEATHER), calls("page_oncall")]}
        await post(ops.client, "/v1/sessions/s-5/messages", again)
        shown = await client.misses("ops")
        one = await client.misses("ops", limit=1)
        with pytest.raises(NotFoundError) as unknown:
            await client.misses("nowhere")

    assert (before.miss_rate, before.checked, before.latest) == (None, 0, ())
    assert shown.counts == OutcomeCounts(routed=1, searched=1, missed=2)
    assert (shown.namespace, shown.checked, shown.miss_rate) == ("ops", 4, 0.5)
    assert shown.most_missed == (MissedFunction("page_oncall", 2),)
    assert [(c.function, c.session_id, c.request) for c in shown.latest] == [("page_oncall", "s-5", WEATHER)] * 2
    assert all(c.routed == ("get_weather",) for c in shown.latest)
    assert shown.latest[0].at >= shown.latest[1].at
    assert one.latest == shown.latest[:1]
    assert (unknown.value.status_code, unknown.value.error) == (404, "NamespaceNotFound")
