"""``router mcp --url``'s requests to a running router: what each may wait for."""

from __future__ import annotations

import httpx

from router.catalog.functions import parse_function
from router.mcp.remote import PUT_WAIT_SECONDS, RemoteBackend


async def test_a_catalog_put_waits_for_its_embedding_longer_than_a_route() -> None:
    # A PUT of 9,000 new tools timed out at 30 s, while the router went on embedding them.
    reads: list[tuple[str, float]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        reads.append((request.method, request.extensions["timeout"]["read"]))
        if request.method == "PUT":
            return httpx.Response(200, json={"namespace": "desk", "added": 1})
        return httpx.Response(200, json={"functions": []})

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer), timeout=30.0) as http:
        backend = RemoteBackend("http://router", client=http)
        function = parse_function({"name": "get_forecast", "description": "Weather forecast."}, where="test")
        await backend.apply("desk", [function], source="mcp:desk")
        await backend.route("desk", "weather in Rome", max_functions=3)
    assert reads == [("PUT", PUT_WAIT_SECONDS), ("POST", 30.0)]
