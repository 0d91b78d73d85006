"""The console's files and ``GET /v1/status``, through the app with its lifespan, the real model and embedded storage.

The page itself is driven in a browser by ``tests/browser``; here: what is served to whom,
with which headers, and what the status tells about catalogs, syncs, health and traffic.
"""

from __future__ import annotations

import asyncio
import json
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from router.api.keys import AuthSettings
from router.console import ASSETS, SCRIPTS, asset
from router.embedding import EmbedderPool
from tests.conftest import EXAMPLE_COUNTS, EXAMPLES, ROOT, CountingEmbedder, large_catalog, write_catalog

pytestmark = pytest.mark.integration

ADMIN = "admin-7f3a9c1e5b2d4f6a8c0e"
TRAVEL = "travel-2b4d6f8a0c1e3a5c7e9b"
TURN = [{"role": "user", "content": "Find me a flight from Lisbon to Rome"}]


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


async def test_the_page_and_its_assets_are_served_with_a_content_security_policy(serve: Callable[..., Any]) -> None:
    async with serve() as served:
        page = await served.client.get("/console")
        script = await served.client.get("/console/app.js")
        style = await served.client.get("/console/app.css")
        unknown = await served.client.get("/console/secrets.txt")
        slash = await served.client.get("/console/")

    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert '<script type="module" src="console/app.js"></script>' in page.text
    for response in (page, script, style):
        policy = response.headers["content-security-policy"]
        assert "default-src 'none'" in policy
        assert "script-src 'self'" in policy
        assert "connect-src 'self'" in policy
        assert response.headers["x-content-type-options"] == "nosniff"
    assert script.headers["content-type"] == "text/javascript; charset=utf-8"
    assert script.content == asset("app.js")
    assert style.headers["content-type"] == "text/css; charset=utf-8"
    assert unknown.status_code == 404
    assert unknown.json()["error"] == "NotFound"
    assert slash.status_code == 308
    assert slash.headers["location"] == "../console"


def test_the_console_files_are_package_data() -> None:
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = package_data["router.console"]

    for name in ASSETS:
        assert any(Path(name).match(p) for p in patterns), name
        assert asset(name)
    with pytest.raises(KeyError):
        asset("__init__.py")


def test_the_scripts_never_write_html() -> None:
    for name in SCRIPTS:
        script = asset(name).decode()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert sink not in script, (name, sink)
        for imported in re.findall(r'from "\./([a-z]+\.js)"', script):
            assert imported in SCRIPTS, (name, imported)


async def test_without_keys_the_console_answers_loopback_only(serve: Callable[..., Any]) -> None:
    async with serve() as served:
        remote = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=served.app, client=("203.0.113.9", 4711)), base_url="http://test"
        )
        async with remote:
            page = await remote.get("/console")
            script = await remote.get("/console/app.js")
        local = await served.client.get("/console")

    assert page.status_code == 403
    assert page.json()["detail"] == (
        "the console is served to loopback only while no API keys are configured (ROUTER_API_KEYS)"
    )
    assert script.status_code == 403
    assert local.status_code == 200


async def test_with_keys_the_page_is_open_and_its_data_needs_a_key(serve: Callable[..., Any]) -> None:
    auth = AuthSettings(api_keys=json.dumps({ADMIN: "*", TRAVEL: ["travel"]}))
    async with serve(catalog=EXAMPLES, auth=auth) as served:
        remote = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=served.app, client=("203.0.113.9", 4711)), base_url="http://test"
        )
        async with remote:
            page = await remote.get("/console")
            anonymous = await remote.get("/v1/status")
            travel = await remote.get("/v1/status", headers=bearer(TRAVEL))
            admin = await remote.get("/v1/status", headers=bearer(ADMIN))

    assert page.status_code == 200
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"] == 'Bearer realm="tool-router"'
    assert [c["namespace"] for c in travel.json()["catalogs"]] == ["travel"]
    assert travel.json()["auth"] == {"keys": True, "namespaces": ["travel"]}
    assert [c["namespace"] for c in admin.json()["catalogs"]] == sorted(EXAMPLE_COUNTS)
    assert admin.json()["auth"] == {"keys": True, "namespaces": None}


async def test_status_tells_catalogs_generation_health_and_backend(serve: Callable[..., Any]) -> None:
    async with serve(catalog=EXAMPLES) as served:
        status = (await served.client.get("/v1/status")).json()
        embedder = served.runtime.service.index.embedder

    assert status["ready"] is True
    assert status["checks"] == {"storage": True, "model": True, "first_sync": True}
    assert status["storage"] == {"mode": "embedded", "up": True, "detail": None}
    assert status["generation"]["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert status["generation"]["text"] == "readable_schema"
    assert status["generation"]["dimension"] == 384
    assert status["generation"]["rebuild_pending"] is False
    assert status["embedding"]["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert status["embedding"]["dimension"] == 384
    assert status["embedding"] == embedder.describe()
    counts = {c["namespace"]: c["count"] for c in status["catalogs"]}
    assert counts == EXAMPLE_COUNTS
    for catalog in status["catalogs"]:
        assert catalog["source"].startswith("dir:")
        assert catalog["progress"] is None
        sync = catalog["last_sync"]
        assert sync["outcome"] == "changed"
        assert sync["counts"]["added"] == EXAMPLE_COUNTS[catalog["namespace"]]
        assert sync["at"] >= catalog["updated_at"]
    assert status["sync"] == {"running": [], "functions_written": sum(EXAMPLE_COUNTS.values())}
    assert status["auth"] == {"keys": False, "namespaces": None}


async def test_status_counts_routes_with_their_latency_percentiles(serve: Callable[..., Any]) -> None:
    async with serve(catalog=EXAMPLES) as served:
        before = (await served.client.get("/v1/status")).json()["traffic"]
        for _ in range(5):
            answer = await served.client.post("/v1/route", json={"namespace": "travel", "messages": TURN})
            assert answer.status_code == 200
        missing = await served.client.post("/v1/route", json={"namespace": "nowhere", "messages": TURN})
        after = (await served.client.get("/v1/status")).json()["traffic"]

    assert missing.status_code == 404
    assert before["since_start"]["requests"] == 0
    assert before["recent"]["p50_ms"] is None
    for figures in (after["recent"], after["since_start"]):
        assert figures["requests"] == 6
        assert figures["errors"] == 1
        assert figures["rate_per_second"] > 0
        assert 0 < figures["p50_ms"] <= figures["p90_ms"] <= figures["p99_ms"]
    # The recent window starts at the previous reading.
    assert after["recent"]["seconds"] < after["since_start"]["seconds"]


async def test_status_shows_the_progress_of_an_embedding_under_way(
    serve: Callable[..., Any], counting: CountingEmbedder, counting_pool: EmbedderPool
) -> None:
    functions = large_catalog(40)
    async with serve(pool=counting_pool) as served:
        hold = counting.pause(lambda texts: any(text.startswith("update") for text in texts))
        try:
            put = asyncio.create_task(served.client.put("/v1/catalogs/big", json={"functions": functions}))
            async with asyncio.timeout(30):
                await hold.reached.wait()
            during = (await served.client.get("/v1/status")).json()
        finally:
            hold.release()
        assert (await put).status_code == 200
        after = (await served.client.get("/v1/status")).json()

    (catalog,) = during["catalogs"]
    assert catalog["namespace"] == "big"
    assert catalog["count"] == 0  # a first sync: nothing is recorded until it is written
    assert catalog["progress"]["total"] == 40
    assert 0 <= catalog["progress"]["done"] < 40
    assert catalog["progress"]["written"] == 0  # held inside the first chunk
    assert during["sync"]["running"] == [catalog["progress"]]
    (done,) = after["catalogs"]
    assert done["count"] == 40
    assert done["progress"] is None
    assert done["last_sync"]["source"] == "api"
    assert done["last_sync"]["outcome"] == "changed"
    assert done["last_sync"]["counts"]["added"] == 40
    assert after["sync"] == {"running": [], "functions_written": 40}


async def test_status_shows_a_rejected_catalog_file(serve: Callable[..., Any], catalog_dir: Path) -> None:
    write_catalog(catalog_dir, "good", [{"name": "get_weather", "description": "Weather for a city."}])
    write_catalog(catalog_dir, "bad", [{"name": "not a name!", "description": "x"}])
    async with serve(catalog=catalog_dir) as served:
        status = (await served.client.get("/v1/status")).json()

    by_name = {c["namespace"]: c for c in status["catalogs"]}
    assert by_name["good"]["last_sync"]["outcome"] == "changed"
    bad = by_name["bad"]
    assert bad["count"] == 0
    assert bad["last_sync"]["outcome"] == "rejected"
    assert "name" in bad["last_sync"]["detail"]
    assert bad["source"].startswith("dir:")


async def test_the_api_documentation_links_the_console(serve: Callable[..., Any]) -> None:
    async with serve() as served:
        document = (await served.client.get("/openapi.json")).json()

    assert "[console](/console)" in document["info"]["description"]
    assert "/v1/status" in document["paths"]
    assert "/console" not in document["paths"]


async def test_the_api_documentation_pages_load_nothing_from_elsewhere(serve: Callable[..., Any]) -> None:
    async with serve() as served:
        for page in ("/docs", "/redoc"):
            html = (await served.client.get(page)).text
            sources = re.findall(r'(?:src|href)="([^"]+)"', html)
            assert sources, page
            assert all(s.startswith("/") for s in sources), (page, sources)
            for source in sources:
                assert (await served.client.get(source)).status_code == 200, source
