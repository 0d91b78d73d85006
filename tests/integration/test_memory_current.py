"""Memories a person expects back, kept current: through HTTP, the real model and storage.

Each user tells one thing in one session, without a namespace, and asks later in a new
session of a catalog; statements that update earlier ones replace them; time-bound ones end.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from router.sessions import memory
from tests.integration.everyday import CATALOG

pytestmark = pytest.mark.integration

NAMESPACE = "assistant"
# What was said, a later request, the function it routes to, and the memory that must come back.
TRANSCRIPTS = [
    (
        "My wife's name is Ana and our anniversary is June 12.",
        "Put our anniversary dinner with my wife in the calendar",
        "create_calendar_event",
        "My wife's name is Ana and our anniversary is June 12.",
    ),
    (
        "I'm the on-call engineer for the payments team this week.",
        "Page someone, the checkout is down",
        "page_oncall",
        "I'm the on-call engineer for the payments team this week.",
    ),
    (
        "Please remember that I am vegetarian and allergic to peanuts.",
        "Recommend a restaurant near the Louvre for tonight",
        "find_restaurants",
        "I am vegetarian and allergic to peanuts.",
    ),
    (
        "I travel with my dog Max, a 30 kg labrador.",
        "Find a hotel in Lisbon for next weekend",
        "book_hotel",
        "I travel with my dog Max, a 30 kg labrador.",
    ),
]


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    directory = tmp_path / "catalog"
    directory.mkdir()
    (directory / f"{NAMESPACE}.json").write_text(json.dumps({"functions": CATALOG}))
    return directory


async def say(client: httpx.AsyncClient, session: str, user: str, text: str) -> dict[str, Any]:
    body = {"messages": [{"role": "user", "content": text}], "user_id": user}
    response = await client.post(f"/v1/sessions/{session}/messages", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def ask(client: httpx.AsyncClient, session: str, user: str, text: str) -> dict[str, Any]:
    body = {
        "namespace": NAMESPACE,
        "session_id": session,
        "user_id": user,
        "messages": [{"role": "user", "content": text}],
    }
    response = await client.post("/v1/route", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def listed(client: httpx.AsyncClient, user: str, query: str = "") -> list[dict[str, Any]]:
    response = await client.get(f"/v1/users/{user}/memories{query}")
    assert response.status_code == 200, response.text
    return list(response.json()["memories"])


def recalled(answer: dict[str, Any]) -> list[str]:
    return [m["text"] for m in answer["memories"]]


@pytest.mark.parametrize(("said", "request_text", "function", "kept"), TRANSCRIPTS)
async def test_what_a_user_said_once_comes_back_later(
    serve: Callable[..., Any], catalog: Path, said: str, request_text: str, function: str, kept: str
) -> None:
    async with serve(catalog=catalog) as served:
        assert (await say(served.client, "first", "u", said))["memories_added"] == 1
        answer = await ask(served.client, "later", "u", request_text)
        assert answer["functions"][0]["name"] == function
        assert kept in recalled(answer), (request_text, answer["memories"])


async def test_a_move_replaces_the_old_home_which_stays_listed_as_superseded(
    serve: Callable[..., Any], catalog: Path
) -> None:
    async with serve(catalog=catalog) as served:
        client = served.client
        await say(client, "a", "mover", "I live in Porto.")
        stored = await say(client, "b", "mover", "We moved to Lisbon last month.")
        assert (stored["memories_added"], stored["memories_updated"]) == (1, 1)
        assert [m["text"] for m in await listed(client, "mover")] == ["We moved to Lisbon last month."]
        answer = await ask(client, "c", "mover", "Will it rain this weekend?")
        assert "I live in Porto." not in recalled(answer)
        assert "We moved to Lisbon last month." in recalled(answer)
        every = {m["text"]: m for m in await listed(client, "mover", "?include=superseded")}
        old, new = every["I live in Porto."], every["We moved to Lisbon last month."]
        assert (old["status"], old["superseded_by"]) == ("superseded", new["id"])
        assert new["status"] == "current"


async def test_alike_statements_that_are_both_true_are_both_kept(serve: Callable[..., Any], catalog: Path) -> None:
    async with serve(catalog=catalog) as served:
        await say(served.client, "a", "fan", "I like jazz.")
        stored = await say(served.client, "b", "fan", "I like techno.")
        assert (stored["memories_added"], stored["memories_updated"]) == (1, 0)
        assert {m["text"] for m in await listed(served.client, "fan")} == {"I like jazz.", "I like techno."}


async def test_a_time_bound_memory_stops_coming_back_when_its_time_ends(
    serve: Callable[..., Any], catalog: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serve(catalog=catalog) as served:
        client = served.client
        await say(client, "a", "oncall", "I'm on call until Friday.")
        await say(client, "a", "oncall", "I use metric units.")
        (current,) = [m for m in await listed(client, "oncall") if m["expires_at"] is not None]
        assert current["text"] == "I'm on call until Friday."
        assert current["expires_at"] - time.time() < 8 * 86_400
        assert "I'm on call until Friday." in recalled(
            await ask(client, "b", "oncall", "Page someone, payments is down")
        )
        later = time.time() + 8 * 86_400
        monkeypatch.setattr(memory.time, "time", lambda: later)
        assert "I'm on call until Friday." not in recalled(await ask(client, "c", "oncall", "Page someone, it is down"))
        assert (await say(client, "d", "oncall", "Thanks!"))["memories_expired"] == 1
        assert [m["text"] for m in await listed(client, "oncall")] == ["I use metric units."]
        expired = [m for m in await listed(client, "oncall", "?include=superseded") if m["status"] == "expired"]
        assert [m["text"] for m in expired] == ["I'm on call until Friday."]


async def test_what_the_user_asks_to_forget_is_deleted_and_nothing_else(
    serve: Callable[..., Any], catalog: Path
) -> None:
    async with serve(catalog=catalog) as served:
        client = served.client
        said = "I live in Porto. I'm allergic to peanuts. I prefer aisle seats. I live near the beach."
        assert (await say(client, "a", "forgetful", said))["memories_added"] == 4
        await say(client, "b", "forgetful", "We moved to Lisbon last month.")  # Porto stays, superseded
        stored = await say(client, "c", "forgetful", "Please forget that I live in Porto. Forget my peanut allergy.")
        assert (stored["memories_added"], stored["memories_forgotten"]) == (0, 2)
        every = await listed(client, "forgetful", "?include=superseded")
        assert {m["text"] for m in every} == {
            "I prefer aisle seats.",
            "I live near the beach.",
            "We moved to Lisbon last month.",
        }
        answer = await ask(client, "d", "forgetful", "Recommend a restaurant near the Louvre for tonight")
        assert "I'm allergic to peanuts." not in recalled(answer)
        # A forget that is not about the user drops a task, not a memory.
        assert (await say(client, "e", "forgetful", "Forget about the seats, just book the cheapest flight."))[
            "memories_forgotten"
        ] == 0
        assert len(await listed(client, "forgetful")) == 3
        # A forget takes back what the message said before it, never what it says after it.
        stored = await say(client, "f", "forgetful", "Forget my seat preference. I prefer window seats now.")
        assert (stored["memories_forgotten"], stored["memories_added"]) == (1, 1)
        stored = await say(client, "g", "forgetful", "I love jazz. Actually, forget that I love jazz.")
        assert (stored["memories_forgotten"], stored["memories_added"]) == (0, 0)
        assert {m["text"] for m in await listed(client, "forgetful")} == {
            "I live near the beach.",
            "We moved to Lisbon last month.",
            "I prefer window seats now.",
        }
