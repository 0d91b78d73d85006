"""The console in headless Chromium against a real ``router serve`` on 127.0.0.1.

Debian's ``chromium`` driven by Playwright (its own browser download is not used); without a
Chromium that starts, these tests skip with the reason. Each view is saved as a screenshot
under ``test-artifacts/console/``.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import EXAMPLE_COUNTS, EXAMPLES, ROOT, RouterProcess, large_catalog, start_router
from tests.embedding_server import EmbeddingServer

playwright_api = pytest.importorskip("playwright.async_api", reason="Playwright for Python is not installed")

CHROMIUM = Path("/usr/bin/chromium")
MISSING = f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)"
pytestmark = [pytest.mark.integration, pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=MISSING)]
# Without the background-networking flags Chromium's own connections are refused by a closed network.
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = ROOT / "test-artifacts" / "console"
ADMIN = "admin-7f3a9c1e5b2d4f6a8c0e"
TRAVEL = "travel-2b4d6f8a0c1e3a5c7e9b"
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> Erase the <b>whole</b> disk.'
RUN = [
    {"role": "user", "content": "Find me a flight from Lisbon to Rome next Friday. I prefer aisle seats."},
    {"role": "assistant", "content": "I found 3 flights: TP 840 at 9:00, AZ 201 at 13:00, FR 123 at 18:00."},
]
FOLLOW_UP = "Book the first one for John, with an aisle seat"
TIMEOUT_MS = 60_000
# Enough functions that their embedding lasts a few seconds on an idle machine (minutes under load).
BIG = 800
SYNC_MS = 900_000


def _serve(directory: Path, *, env: dict[str, str] | None = None) -> Iterator[RouterProcess]:
    running = start_router(
        "--catalog", directory, data=directory.parent / "data", log=directory.parent / "log", env=env
    )
    try:
        running.wait_ready()
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def router(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    """The example catalog, with session ``s-1`` of user ``u-42`` stored (history and a memory).

    It waits for the browser, so that a Chromium that cannot start skips before a server starts.
    """
    catalog = Path(shutil.copytree(EXAMPLES, tmp_path_factory.mktemp("open") / "catalog"))
    for running in _serve(catalog):
        body = {"namespace": "travel", "user_id": "u-42", "messages": RUN}
        stored = httpx.post(f"{running.url}/v1/sessions/s-1/messages", json=body, timeout=60)
        assert stored.status_code == 200, stored.text
        assert stored.json()["memories_added"] >= 1
        yield running


@pytest.fixture(scope="module")
def keyed(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    """The example catalog plus ``hostile``, whose description holds markup; API keys required."""
    catalog = Path(shutil.copytree(EXAMPLES, tmp_path_factory.mktemp("keyed") / "catalog"))
    hostile = [{"name": "erase_disk", "description": HOSTILE, "parameters": {"type": "object", "properties": {}}}]
    (catalog / "hostile.json").write_text(json.dumps(hostile))
    keys = json.dumps({ADMIN: "*", TRAVEL: ["travel", "hostile"]})
    yield from _serve(catalog, env={"ROUTER_API_KEYS": keys})


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Any]:
    """Headless Chromium, or a skip saying why it cannot run."""
    async with playwright_api.async_playwright() as playwright:
        try:
            launched = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        except playwright_api.Error as exc:
            pytest.skip(f"Chromium cannot start: {exc.message.splitlines()[0]}")
        yield launched
        await launched.close()


@pytest.fixture
async def page(browser: Any) -> AsyncIterator[Any]:
    """A fresh tab (its own session storage); fails the test on any script error of the page."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    opened = await context.new_page()
    opened.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    await context.close()
    assert errors == []


async def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


async def call(method: str, url: str, body: Any = None) -> Any:
    """The API's own JSON answer (failing on an error status)."""
    async with httpx.AsyncClient(timeout=60) as client:
        response = await client.request(method, url, json=body)
    assert response.is_success, response.text
    return response.json()


async def texts(page: Any, selector: str) -> list[str]:
    found: list[str] = await page.locator(selector).all_text_contents()
    return found


async def try_turn(
    page: Any, url: str, content: str, *, session: str = "", user: str = "", namespace: str = "travel"
) -> dict[str, Any]:
    """Route ``content`` from the page; the body the page shows it sent."""
    await page.goto(f"{url}/console#try")
    await page.locator(f"#try-namespace option[value={namespace}]").wait_for(state="attached")
    await page.select_option("#try-namespace", namespace)
    await page.fill("#try-session", session)
    await page.fill("#try-user", user)
    await page.fill("#try-messages .content", content)
    await page.click("#try-submit")
    await page.locator("#ranked li.routed").first.wait_for()
    shown: dict[str, Any] = json.loads(await page.locator("#route-body").text_content())
    return shown


async def test_console_opens_a_catalog(router: RouterProcess, page: Any) -> None:
    await page.goto(f"{router.url}/console")
    rows = page.locator("#catalogs tbody tr")
    await rows.nth(len(EXAMPLE_COUNTS) - 1).wait_for()

    assert await texts(page, "#catalogs td.name") == sorted(EXAMPLE_COUNTS)
    assert await texts(page, "#catalogs td.count") == [str(EXAMPLE_COUNTS[n]) for n in sorted(EXAMPLE_COUNTS)]
    assert "changed (15 added)" in await page.locator("tr[data-namespace=travel]").text_content()
    assert "all-MiniLM-L6-v2" in await page.locator("#generation").text_content()

    await page.click("tr[data-namespace=travel] button")
    await page.locator("#functions li.function").nth(EXAMPLE_COUNTS["travel"] - 1).wait_for()
    catalog = await call("GET", f"{router.url}/v1/catalogs/travel")
    first = catalog["functions"][0]
    first = first.get("function", first)
    item = page.locator("#functions li.function").first
    assert await item.locator(".fn-name").text_content() == first["name"]
    assert await item.locator(".fn-description").text_content() == first["description"]
    schema = item.locator("pre.schema")
    assert not await schema.is_visible()
    await item.locator("button").click()
    assert await schema.is_visible()
    assert json.loads(await schema.text_content()) == first["parameters"]
    await shot(page, "catalogs")


async def test_console_shows_the_catalog_opened_last_whichever_answers_first(router: RouterProcess, page: Any) -> None:
    released = asyncio.Event()

    async def slow(request: Any) -> None:
        await released.wait()
        await request.continue_()

    await page.goto(f"{router.url}/console")
    await page.locator("tr[data-namespace=devops] button").wait_for()
    await page.route("**/v1/catalogs/devops", slow)
    await page.click("tr[data-namespace=devops] button")
    await page.click("tr[data-namespace=travel] button")
    await page.locator("#functions li.function").nth(EXAMPLE_COUNTS["travel"] - 1).wait_for()
    released.set()  # devops answers last: it must not take the place of travel, nor add to its list
    await page.wait_for_timeout(500)

    assert await page.locator("#catalog-title").text_content() == f"travel: {EXAMPLE_COUNTS['travel']} functions"
    assert await page.locator("#functions li.function").count() == EXAMPLE_COUNTS["travel"]


async def test_console_says_which_routed_functions_the_model_will_not_get(router: RouterProcess, page: Any) -> None:
    functions = [
        {"name": "files.read", "description": "Read a file from the shared drive.", "parameters": {"type": "object"}},
        {"name": "write_file", "description": "Write a file to the shared drive.", "parameters": {"type": "object"}},
    ]
    await call("PUT", f"{router.url}/v1/catalogs/drive", {"functions": functions})
    await try_turn(page, router.url, "read the budget file", namespace="drive")

    refused = page.locator('#ranked li.routed[data-name="files.read"] .left-out')
    assert (await refused.text_content() or "").startswith("Not in tools: OpenAI refuses the name")
    assert await page.locator('#ranked li.routed[data-name="write_file"] .left-out').count() == 0


async def test_console_lists_a_catalog_opened_twice_once(router: RouterProcess, page: Any) -> None:
    released, seen = asyncio.Event(), [0]

    async def first_slow(request: Any) -> None:
        seen[0] += 1
        if seen[0] == 1:
            await released.wait()
        await request.continue_()

    await page.goto(f"{router.url}/console")
    await page.locator("tr[data-namespace=travel] button").wait_for()
    await page.route("**/v1/catalogs/travel", first_slow)
    await page.click("tr[data-namespace=travel] button")
    await page.click("tr[data-namespace=travel] button")
    await page.locator("#functions li.function").nth(EXAMPLE_COUNTS["travel"] - 1).wait_for()
    released.set()
    await page.wait_for_timeout(500)

    assert await page.locator("#functions li.function").count() == EXAMPLE_COUNTS["travel"]


async def test_console_tries_a_turn(router: RouterProcess, page: Any) -> None:
    body = await try_turn(page, router.url, FOLLOW_UP, session="s-1", user="u-42")
    answer = await call("POST", f"{router.url}/v1/route", body)

    assert body["namespace"] == "travel"
    assert body["messages"] == [{"role": "user", "content": FOLLOW_UP}]
    assert (body["session_id"], body["user_id"], body["max_functions"]) == ("s-1", "u-42", 3)
    assert await texts(page, "#ranked .fn-name") == [f["name"] for f in answer["functions"]]
    assert await texts(page, "#ranked .score") == [f"{f['score']:.3f}" for f in answer["functions"]]
    assert "book_flight" in [f["name"] for f in answer["functions"]]
    widths = await page.locator("#ranked .fill").evaluate_all("bars => bars.map(b => parseFloat(b.style.width))")
    assert widths == [pytest.approx(max(0.0, min(1.0, f["score"])) * 100, abs=1e-3) for f in answer["functions"]]
    history = await texts(page, "#try-history li")
    assert len(history) == len(answer["history"]) == len(RUN)
    assert history[0] == f"user: {RUN[0]['content']}"
    assert await texts(page, "#try-memories .memory-text") == [m["text"] for m in answer["memories"]]
    assert answer["memories"]
    await shot(page, "try")


async def test_console_explains_scores(router: RouterProcess, page: Any) -> None:
    body = await try_turn(page, router.url, "Find me a flight from Lisbon to Rome next Friday")
    answer = await call("POST", f"{router.url}/v1/route", body)

    assert body["explain"] is True
    items = page.locator("#ranked li.routed")
    assert await items.count() == len(answer["functions"])
    for index, routed in enumerate(answer["functions"]):
        explanation = routed["explanation"]
        shown = await items.nth(index).locator(".explanation").text_content()
        assert f"dense {explanation['dense']:.3f}" in shown
        assert f"lexical {explanation['lexical']:.3f}" in shown
        assert f"context weight {explanation['context_weight']:.2f}" in shown
        assert f"usage {explanation['weights']['usage']:.2f}" in shown
        if explanation["example"] is not None:
            assert explanation["example"]["text"] in shown
    await shot(page, "try-explained")


async def test_console_shows_a_session(router: RouterProcess, page: Any) -> None:
    await page.goto(f"{router.url}/console#sessions")
    await page.fill("#session-id", "s-1")
    await page.click("#session-form button")
    await page.locator("#session-messages tbody tr").nth(len(RUN) - 1).wait_for()
    stored = (await call("GET", f"{router.url}/v1/sessions/s-1/messages"))["messages"]

    assert await texts(page, "#session-messages td.content") == [m["content"] for m in stored]
    assert await texts(page, "#session-messages td.source") == [m["source"] for m in stored] == ["external"] * 2
    await page.fill("#session-id", "nobody-here")
    await page.click("#session-form button")
    await page.locator("#session-empty").wait_for()
    await page.fill("#session-id", "s-1")
    await page.click("#session-form button")
    await page.locator("#session-messages tbody tr").first.wait_for()
    await shot(page, "sessions")


async def test_console_shows_stored_responses_api_items(router: RouterProcess, page: Any) -> None:
    items = [
        {"role": "user", "content": "Find flights to Rome"},
        {"type": "function_call", "call_id": "c1", "name": "search_flights", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "3 flights found"},
    ]
    await call("POST", f"{router.url}/v1/sessions/responses-1/messages", {"namespace": "travel", "messages": items})
    await page.goto(f"{router.url}/console#sessions")
    await page.fill("#session-id", "responses-1")
    await page.click("#session-form button")
    await page.locator("#session-messages tbody tr").nth(2).wait_for()

    rows = page.locator("#session-messages tbody tr")
    roles = [await rows.nth(i).locator("td").nth(1).text_content() for i in range(3)]
    assert roles == ["user", "assistant", "tool"]
    assert await texts(page, "#session-messages td.content") == [
        "Find flights to Rome",
        "[calls search_flights]",
        "3 flights found",
    ]


async def test_console_deletes_a_memory(router: RouterProcess, page: Any) -> None:
    before = (await call("GET", f"{router.url}/v1/users/u-42/memories"))["memories"]
    await page.goto(f"{router.url}/console#sessions")
    await page.fill("#memory-user", "u-42")
    await page.click("#memory-form button")
    memories = page.locator("#memories li.memory")
    await memories.nth(len(before) - 1).wait_for()
    assert await texts(page, "#memories .memory-text") == [m["text"] for m in before]
    await shot(page, "memories")

    gone = before[0]["id"]
    await page.locator(f'#memories li.memory[data-id="{gone}"] button').click()
    await page.locator(f'#memories li.memory[data-id="{gone}"]').wait_for(state="detached")

    after = (await call("GET", f"{router.url}/v1/users/u-42/memories"))["memories"]
    assert [m["id"] for m in after] == [m["id"] for m in before[1:]]
    assert await memories.count() == len(after)


async def test_console_deletes_all_of_the_memories_it_lists_and_no_others(router: RouterProcess, page: Any) -> None:
    said = {("alice", "travel"): "I prefer aisle seats.", ("alice", "commerce"): "I prefer express shipping."}
    said[("bob", "travel")] = "I prefer window seats."
    for (user, namespace), text in said.items():
        body = {"namespace": namespace, "user_id": user, "messages": [{"role": "user", "content": text}]}
        assert (await call("POST", f"{router.url}/v1/sessions/{user}-{namespace}/messages", body))[
            "memories_added"
        ] == 1
    await page.goto(f"{router.url}/console#sessions")
    await page.locator('#memory-namespace option[value="travel"]').wait_for(state="attached")
    await page.fill("#memory-user", "alice")
    await page.select_option("#memory-namespace", "travel")
    await page.click("#memory-form button")
    await page.locator("#memories li.memory").first.wait_for()
    # Fields changed after listing do not change what "Delete all" deletes: the memories shown.
    await page.fill("#memory-user", "bob")
    await page.select_option("#memory-namespace", "")
    asked: list[str] = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), asyncio.ensure_future(dialog.accept())))
    await page.click("#delete-all")
    await page.locator("#memories-empty").wait_for()

    assert asked == ["Delete every memory of user alice in namespace travel?"]
    left = {
        u: [m["text"] for m in (await call("GET", f"{router.url}/v1/users/{u}/memories"))["memories"]]
        for u in ("alice", "bob")
    }
    assert left == {"alice": ["I prefer express shipping."], "bob": ["I prefer window seats."]}


async def test_console_says_the_router_is_gone_and_recovers_on_its_own(router: RouterProcess, page: Any) -> None:
    await page.goto(f"{router.url}/console")
    await page.locator("#catalogs tbody tr").first.wait_for()
    await page.route("**/v1/status", lambda request: asyncio.ensure_future(request.abort()))
    await page.reload()
    banner = page.locator("#banner")
    await banner.wait_for()
    assert "The router cannot be reached" in (await banner.text_content() or "")
    await page.unroute("**/v1/status")
    await banner.wait_for(state="hidden")  # the next poll answers: no click needed
    assert await page.locator("#catalogs tbody tr").count() > 0


async def test_console_shows_health(router: RouterProcess, page: Any) -> None:
    await call("POST", f"{router.url}/v1/route", {"namespace": "travel", "messages": RUN[:1]})
    await page.goto(f"{router.url}/console#health")
    await page.locator("#health-traffic tbody tr").nth(1).wait_for()
    status = await call("GET", f"{router.url}/v1/status")

    ready = await texts(page, "#health-ready dd")
    assert ready == ["yes", "ok", "ok", "ok"]
    assert await texts(page, "#health-storage dd") == ["embedded", "up"]
    embedding = await texts(page, "#health-embedding dd")
    described = status["embedding"]
    assert embedding == ["local", described["model"], "384", "cpu", str(described["threads"]), str(described["lanes"])]
    since_start = await texts(page, "#health-traffic tbody tr:nth-child(2) td")
    assert int(since_start[1]) >= 1  # requests
    assert float(since_start[4]) > 0  # p50 ms
    await shot(page, "health")


async def test_console_shows_the_embedding_service_and_its_failure(
    browser: Any, page: Any, tmp_path: Path, embedding_server: EmbeddingServer
) -> None:
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    shutil.copy(EXAMPLES / "travel.json", catalog)
    env = {
        "ROUTER_EMBEDDING_URL": embedding_server.url,
        "ROUTER_EMBEDDING_MODEL": "hash-embed",
        "ROUTER_EMBEDDING_QUERY_PREFIX": "query: ",
        "ROUTER_EMBEDDING_RETRIES": "0",
    }
    for running in _serve(catalog, env=env):
        await page.goto(f"{running.url}/console#health")
        await page.locator("#health-embedding dd").nth(5).wait_for()
        assert await texts(page, "#health-embedding dd") == [
            "openai",
            embedding_server.url,
            "hash-embed",
            "64",
            '"query: "',
            "4",
            "answering",
        ]
        assert "openai model openai:hash-embed@" in (await page.locator("#generation").text_content() or "")
        embedding_server.stop()
        body = {"namespace": "travel", "messages": RUN[:1]}
        async with httpx.AsyncClient(timeout=60) as client:
            refused = await client.post(f"{running.url}/v1/route", json=body)
        assert refused.status_code == 503
        await page.reload()
        await page.locator("#health-embedding dd").nth(5).wait_for()
        state = (await texts(page, "#health-embedding dd"))[-1]
        assert state.startswith("failing: embedding service ")
        assert "cannot be reached" in state
        assert (await texts(page, "#health-ready dd"))[-1] == "failing"
        await shot(page, "health-embedding-service")


async def test_console_asks_for_a_key_and_shows_only_its_namespaces(keyed: RouterProcess, page: Any) -> None:
    sent: list[str | None] = []
    page.on(
        "request", lambda request: sent.append(request.headers.get("authorization")) if "/v1/" in request.url else None
    )
    response = await page.goto(f"{keyed.url}/console")
    assert response.status == 200
    assert "default-src 'none'" in response.headers["content-security-policy"]
    await page.locator("#key-panel").wait_for()
    await shot(page, "key")

    await page.fill("#key-input", "not-a-key-0000000000")
    await page.click("#key-form button")
    await page.locator("#key-error").filter(has_text="That key is not valid.").wait_for()
    await page.fill("#key-input", TRAVEL)
    await page.click("#key-form button")
    await page.locator("#catalogs tbody tr").nth(1).wait_for()

    assert await texts(page, "#catalogs td.name") == ["hostile", "travel"]
    assert await page.locator("#who").text_content() == "key for hostile, travel"
    assert await page.evaluate("sessionStorage.getItem('router.apiKey')") == TRAVEL
    assert await page.evaluate("localStorage.length") == 0
    assert await page.context.cookies() == []
    assert sent[0] is None
    assert f"Bearer {TRAVEL}" in sent
    assert await page.locator("#try-namespace option").all_text_contents() == ["hostile", "travel"]


async def test_console_never_renders_catalog_text_as_html(keyed: RouterProcess, page: Any) -> None:
    await page.goto(f"{keyed.url}/console")
    await page.locator("#key-panel").wait_for()  # the first answer, a 401, is in: nothing clears the key now
    await page.evaluate(f"sessionStorage.setItem('router.apiKey', {json.dumps(ADMIN)})")
    await page.reload()
    await page.click("tr[data-namespace=hostile] button")
    description = page.locator("#functions .fn-description")
    await description.wait_for()

    assert await description.text_content() == HOSTILE
    assert await page.locator("#functions script, #functions img, #functions b").count() == 0

    await page.goto(f"{keyed.url}/console#try")
    await page.locator("#try-namespace option[value=hostile]").wait_for(state="attached")
    await page.select_option("#try-namespace", "hostile")
    await page.fill("#try-messages .content", "erase the whole disk")
    await page.click("#try-submit")
    await page.locator("#ranked li.routed").first.wait_for()

    assert await page.locator("#ranked .fn-description").text_content() == HOSTILE
    assert await page.locator("#ranked script, #ranked img, #ranked b").count() == 0
    assert await page.evaluate("window.__pwned") is None
    await shot(page, "hostile")


async def test_console_shows_the_progress_of_a_large_sync(router: RouterProcess, page: Any) -> None:
    functions = large_catalog(BIG)
    await page.goto(f"{router.url}/console")
    await page.locator("#catalogs tbody tr").first.wait_for()
    async with httpx.AsyncClient(base_url=router.url, timeout=SYNC_MS / 1000) as client:
        put = asyncio.create_task(client.put("/v1/catalogs/big", json={"functions": functions}))
        try:
            async with asyncio.timeout(120):
                while not (await client.get("/v1/status")).json()["sync"]["running"]:
                    assert not put.done(), put.result().text if put.done() else ""
                    await asyncio.sleep(0.02)
            # Changing view reads the status again; from then on the page polls every second.
            await page.evaluate("window.dispatchEvent(new HashChangeEvent('hashchange'))")
            bar = page.locator("tr[data-namespace=big] progress")
            await bar.wait_for()
            assert await bar.get_attribute("max") == str(BIG)
            assert int(await bar.get_attribute("value") or -1) < BIG
            await shot(page, "catalogs-syncing")
            assert (await put).status_code == 200
            # The page polls every second while a sync runs, and shows the result when it ends.
            await bar.wait_for(state="detached", timeout=SYNC_MS)
            row = page.locator("tr[data-namespace=big]")
            assert await row.locator("td.count").text_content() == str(BIG)
            assert f"changed ({BIG} added)" in await row.text_content()
        finally:
            if not put.done():
                await put
            await client.delete("/v1/catalogs/big")


async def test_console_shows_the_functions_missed_most(router: RouterProcess, page: Any) -> None:
    turn = "Is my flight TP 840 on time today?"
    body = {"namespace": "travel", "session_id": "s-miss", "messages": [{"role": "user", "content": turn}]}
    routed = [
        f["name"] for f in (await call("POST", f"{router.url}/v1/route", {**body, "max_functions": 1}))["functions"]
    ]
    assert "cancel_booking" not in routed
    call_message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c-1", "type": "function", "function": {"name": "cancel_booking", "arguments": "{}"}}],
    }
    run = {"namespace": "travel", "messages": [{"role": "user", "content": turn}, call_message]}
    await call("POST", f"{router.url}/v1/sessions/s-miss/messages", run)
    misses = await call("GET", f"{router.url}/v1/catalogs/travel/misses")

    await page.goto(f"{router.url}/console")
    await page.click("tr[data-namespace=travel] button")
    rate = page.locator("#miss-rate")
    await rate.filter(has_text="Miss rate").wait_for()

    assert misses["counts"]["missed"] >= 1
    assert f"{misses['counts']['missed']} of {misses['checked']} calls checked" in await rate.text_content()
    assert f"Miss rate {misses['miss_rate'] * 100:.1f}%" in await rate.text_content()
    assert await texts(page, "#missed-functions td.name") == [f["name"] for f in misses["most_missed"]]
    assert "cancel_booking" in await texts(page, "#missed-functions td.name")
    latest = page.locator("#missed-calls tbody tr").first
    assert await latest.locator("td.name").text_content() == "cancel_booking"
    assert await latest.locator("td.request").text_content() == turn
    assert await latest.locator("td.routed").text_content() == ", ".join(routed)
    await shot(page, "catalogs-misses")
