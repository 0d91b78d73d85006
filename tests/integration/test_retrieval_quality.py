"""Retrieval on small real catalogs: fusion, score explanations, learned ranking, follow-ups.

Real model, embedded Qdrant, HTTP through the ASGI app.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from router.client import AsyncRouterClient, Explanation, RouterClient
from tests.conftest import EXAMPLES, Served, bare

pytestmark = pytest.mark.integration

# Every description shares the same words ("model", "image", "pretrained"): BM25 cannot tell them apart.
MODELS = [
    bare("resnet_classifier", "Pretrained image model that classifies an image into object categories."),
    bare("detr_detector", "Pretrained image model that finds objects in an image and draws boxes around them."),
    bare("segformer_segmenter", "Pretrained image model that labels each pixel of an image with its class."),
    bare("depth_estimator", "Pretrained image model that estimates how far each pixel of an image is."),
    bare("caption_writer", "Pretrained image model that writes a sentence describing an image."),
]
# Names and rare words decide here.
TOOLS = [
    bare("convert_currency", "Convert an amount between currencies.", amount="Amount", to="Target currency"),
    bare("get_weather", "Current weather for a city.", city="City"),
    bare(
        "kubectl_rollout_restart",
        "Restart a kubernetes deployment with kubectl rollout restart.",
        deployment="Deployment",
    ),
    bare("send_email", "Send an email message.", to="Recipient", body="Text"),
    bare("create_calendar_event", "Add an event to the calendar.", title="Title", start="Start time"),
]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def calls(*names: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": "{}"}}
            for i, n in enumerate(names)
        ],
    }


async def route(client: httpx.AsyncClient, namespace: str, text: str, **extra: Any) -> dict[str, Any]:
    body = {"namespace": namespace, "messages": [user(text)], "max_functions": 5, **extra}
    response = await client.post("/v1/route", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


@pytest.fixture
async def served(serve: Callable[..., Any]) -> Any:
    async with serve() as running:
        for namespace, functions in (("models", MODELS), ("tools", TOOLS)):
            response = await running.client.put(f"/v1/catalogs/{namespace}", json={"functions": functions})
            assert response.status_code == 200, response.text
        yield running


async def test_explain_gives_each_function_the_parts_of_its_score(served: Served) -> None:
    answer = await route(served.client, "tools", "restart the kubernetes deployment", explain=True)
    first = answer["functions"][0]
    assert first["name"] == "kubectl_rollout_restart"
    for function in answer["functions"]:
        explanation = function["explanation"]
        assert set(explanation) >= {
            "dense",
            "lexical",
            "lexical_raw",
            "example",
            "context_weight",
            "recent",
            "weights",
        }
        assert -1.0 <= explanation["dense"] <= 1.0
        assert 0.0 <= explanation["lexical"] <= 1.0
        assert explanation["example"] is None  # nothing learned yet
        assert explanation["context_weight"] == 0.0
        assert explanation["recent"] is None
        weights = explanation["weights"]
        assert weights["dense"] + weights["lexical"] == pytest.approx(1.0)
        # The score is the parts put together, and the terms say so.
        semantic = explanation["dense"]
        expected = weights["dense"] * semantic + weights["lexical"] * explanation["lexical"]
        assert function["score"] == pytest.approx(expected, abs=1e-6)
        assert sum(explanation["terms"].values()) == pytest.approx(function["score"], abs=1e-6)
        assert explanation["part"] is None
    assert first["explanation"]["lexical"] == 1.0
    assert first["explanation"]["lexical_raw"] > 0


async def test_explanations_are_absent_unless_asked(served: Served) -> None:
    answer = await route(served.client, "tools", "restart the kubernetes deployment")
    assert all(f["explanation"] is None for f in answer["functions"])
    schema = (await served.client.get("/openapi.json")).json()["components"]["schemas"]
    assert schema["RouteIn"]["properties"]["explain"]["default"] is False
    assert {"dense", "lexical", "lexical_raw", "example", "context_weight", "recent", "weights"} <= set(
        schema["Explanation"]["properties"]
    )


async def test_the_clients_read_explanations_as_typed_objects(served: Served) -> None:
    transport = httpx.ASGITransport(app=served.app)
    async with AsyncRouterClient("http://test", transport=transport) as client:
        result = await client.route("tools", "restart the kubernetes deployment", max_functions=2, explain=True)
        plain = await client.route("tools", "restart the kubernetes deployment", max_functions=2)
    explanation = result.functions[0].explanation
    assert isinstance(explanation, Explanation)
    assert explanation.example is None
    assert explanation.lexical == 1.0
    assert explanation.weights.dense + explanation.weights.lexical == pytest.approx(1.0)
    assert all(f.explanation is None for f in plain.functions)
    # The sync client builds the same body: read a recorded answer through it.
    body = await route(served.client, "tools", "restart the kubernetes deployment", explain=True)
    sent: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, json=body)

    with RouterClient("http://test", transport=httpx.MockTransport(answer)) as sync:
        typed = sync.route("tools", "restart the kubernetes deployment", explain=True)
    assert sent[0]["explain"] is True
    assert typed.functions[0].explanation is not None
    assert typed.functions[0].explanation.lexical_raw == body["functions"][0]["explanation"]["lexical_raw"]


async def test_rare_words_decide_where_the_meaning_is_shared(served: Served) -> None:
    decisive = await route(served.client, "tools", "kubectl rollout restart for the api deployment", explain=True)
    first = decisive["functions"][0]
    assert first["name"] == "kubectl_rollout_restart"
    assert first["explanation"]["terms"]["lexical"] > 0
    # Where the words are shared by all, they add the same to every function: the cosine ranks.
    vague = await route(served.client, "models", "run a pretrained model on this image", explain=True)
    dense = [f["explanation"]["dense"] for f in vague["functions"]]
    lexical = {round(f["explanation"]["lexical"], 6) for f in vague["functions"]}
    if len(lexical) == 1:
        assert dense == sorted(dense, reverse=True)


async def test_stored_runs_teach_the_ranking_for_requests_like_them(served: Served) -> None:
    train = [
        ("how deep is each part of this photo of a hallway", "depth_estimator"),
        ("which pixels are road and which are sidewalk", "segformer_segmenter"),
        # One run speaks only for the same request; a second one that agrees widens its reach.
        ("which pixels of this street photo are cars and which are people", "segformer_segmenter"),
        ("give me a one-line summary of what is in this picture", "caption_writer"),
    ]
    test = [
        ("how deep is each part of this photo of a garden", "depth_estimator"),
        ("which pixels are sky and which are buildings", "segformer_segmenter"),
        ("give me a one-line summary of what is in this snapshot", "caption_writer"),
    ]

    def position(answer: dict[str, Any], name: str) -> int:
        return [f["name"] for f in answer["functions"]].index(name)

    cold = [position(await route(served.client, "models", text), name) for text, name in test]
    for i, (text, name) in enumerate(train):
        done = {"role": "tool", "tool_call_id": "call_0", "content": "done"}
        body = {"namespace": "models", "messages": [user(text), calls(name), done]}
        response = await served.client.post(f"/v1/sessions/train-{i}/messages", json=body)
        assert response.status_code == 200, response.text
    for text, name in test:
        answer = await route(served.client, "models", text, explain=True)
        first = answer["functions"][0]
        assert first["name"] == name, (text, cold)
        example = first["explanation"]["example"]
        assert example is not None
        assert example["similarity"] > 0.5
        assert example["text"] in {t for t, _ in train}


async def test_the_readme_follow_up_books_the_flight(serve: Callable[..., Any], tmp_path: Path) -> None:
    travel = json.loads((EXAMPLES / "travel.json").read_text(encoding="utf-8"))
    async with serve() as running:
        client = running.client
        assert (await client.put("/v1/catalogs/travel", json=travel)).status_code == 200
        run = {
            "namespace": "travel",
            "user_id": "u-42",
            "messages": [
                user("Find me a flight from Lisbon to Rome next Friday. I prefer aisle seats."),
                {
                    "role": "assistant",
                    "content": "I found 3 flights: TP 840 at 9:00, AZ 201 at 13:00, FR 123 at 18:00.",
                },
            ],
        }
        assert (await client.post("/v1/sessions/s-1/messages", json=run)).status_code == 200
        body = {
            "namespace": "travel",
            "session_id": "s-1",
            "user_id": "u-42",
            "messages": [user("Book the first one for John")],
            "explain": True,
        }
        response = await client.post("/v1/route", json=body)
        paris = await client.post("/v1/route", json={**body, "messages": [user("now do the same for Paris")]})
    assert response.status_code == 200, response.text
    assert paris.status_code == 200, paris.text
    # The search asked again; the user's seat preference is a memory, not the context's request.
    assert paris.json()["functions"][0]["name"] == "search_flights"
    assert "aisle" not in paris.json()["recent_context"]
    functions = response.json()["functions"]
    assert functions[0]["name"] == "book_flight"
    assert functions[0]["explanation"]["context_weight"] > 0
    assert functions[0]["explanation"]["context_only"] is False  # "Book" names its own action
    assert functions[0]["explanation"]["recent"] is not None
    for function in functions:  # the terms under context add up to what the route answers
        assert sum(function["explanation"]["terms"].values()) == pytest.approx(function["score"], abs=1e-6)


async def test_an_elliptical_follow_up_asks_again_what_its_context_asked(serve: Callable[..., Any]) -> None:
    travel = json.loads((EXAMPLES / "travel.json").read_text(encoding="utf-8"))
    async with serve() as running:
        client = running.client
        assert (await client.put("/v1/catalogs/travel", json=travel)).status_code == 200
        run = {"namespace": "travel", "messages": [user("What's the status of flight LH 1234?")]}
        assert (await client.post("/v1/sessions/s-2/messages", json=run)).status_code == 200
        body = {"namespace": "travel", "messages": [user("And AF 456?")], "explain": True}
        alone = await client.post("/v1/route", json=body)
        response = await client.post("/v1/route", json={**body, "session_id": "s-2"})
        again = [user("Thanks! Now please do that for Mary as well.")]
        for_mary = await client.post("/v1/route", json={**body, "messages": again, "session_id": "s-2"})
    assert for_mary.status_code == 200, for_mary.text
    assert for_mary.json()["functions"][0]["name"] == "get_flight_status"
    assert for_mary.json()["functions"][0]["explanation"]["context_only"] is True
    assert alone.status_code == 200, alone.text
    assert alone.json()["functions"][0]["name"] != "get_flight_status"
    assert response.status_code == 200, response.text
    assert response.json()["recent_context"] == "What's the status of flight LH 1234?"  # the request it continues
    functions = response.json()["functions"]
    assert functions[0]["name"] == "get_flight_status"
    assert functions[0]["explanation"]["context_weight"] == 1.0
    assert functions[0]["explanation"]["context_only"] is True
    for function in functions:  # the context's own terms, adding up to what the route answers
        assert sum(function["explanation"]["terms"].values()) == pytest.approx(function["score"], abs=1e-6)
        assert function["score"] == pytest.approx(function["explanation"]["recent"], abs=1e-6)


async def test_a_follow_up_leans_on_the_trouble_the_user_reported(serve: Callable[..., Any]) -> None:
    devops = {"functions": json.loads((EXAMPLES / "devops.json").read_text(encoding="utf-8"))}
    async with serve() as running:
        client = running.client
        assert (await client.put("/v1/catalogs/devops", json=devops)).status_code == 200
        report = "Our payments service has been down since the last deploy."
        run = {"namespace": "devops", "user_id": "u-7", "messages": [user(report)]}
        assert (await client.post("/v1/sessions/s-3/messages", json=run)).status_code == 200
        body = {"namespace": "devops", "user_id": "u-7", "messages": [user("Undo that")]}
        alone = await client.post("/v1/route", json=body)
        response = await client.post("/v1/route", json={**body, "session_id": "s-3"})
        memories = await client.get("/v1/users/u-7/memories", params={"namespace": "devops"})
    assert alone.status_code == 200, alone.text
    assert alone.json()["functions"][0]["name"] != "rollback_deployment"
    assert response.status_code == 200, response.text
    assert response.json()["recent_context"] == f"{report}\nUndo that"
    assert response.json()["functions"][0]["name"] == "rollback_deployment"
    assert memories.status_code == 200, memories.text
    assert memories.json()["memories"] == []  # an outage is not who the user is


async def test_a_question_word_is_no_evidence(serve: Callable[..., Any]) -> None:
    commerce = json.loads((EXAMPLES / "commerce.json").read_text(encoding="utf-8"))
    async with serve() as running:
        client = running.client
        assert (await client.put("/v1/catalogs/commerce", json=commerce)).status_code == 200
        body = {"namespace": "commerce", "messages": [user("Where is my package?")], "explain": True}
        response = await client.post("/v1/route", json=body)
    assert response.status_code == 200, response.text
    functions = response.json()["functions"]
    # issue_refund's "destination" says "Where the money goes.": a question word matched it.
    assert "issue_refund" not in [f["name"] for f in functions[:3]]
    assert {f["name"] for f in functions[:3]} & {"get_order", "track_shipment"}
    assert all(f["explanation"]["lexical_raw"] == 0 for f in functions)  # no word of it is in the catalog
