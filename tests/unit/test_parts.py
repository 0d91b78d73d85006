"""The parts of a turn: what routing and learning split a request into."""

from __future__ import annotations

import pytest

from router.retrieval.parts import parts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Get the pharmacodynamics of Aspirin. Then get the properties of Aspirin tablets. "
            "Lastly, validate the cleanliness of batch BA123.",
            [
                "Get the pharmacodynamics of Aspirin.",
                "get the properties of Aspirin tablets.",
                "validate the cleanliness of batch BA123.",
            ],
        ),
        (
            "Book a flight to Rome. Also, convert 100 euros to dollars.",
            ["Book a flight to Rome.", "convert 100 euros to dollars."],
        ),
        (
            "Ask Mr. Smith about the contract and then email the summary",
            ["Ask Mr. Smith about the contract", "email the summary"],
        ),
        (
            "Find the weather in Oslo, after that book a hotel near the station",
            ["Find the weather in Oslo", "book a hotel near the station"],
        ),
        (
            "1. find a hotel in Rome\n2. book a table for two\n- call a taxi at eight",
            ["find a hotel in Rome", "book a table for two", "call a taxi at eight"],
        ),
        (
            "First, check the weather in Paris, second book a hotel there",
            ["check the weather in Paris", "book a hotel there"],
        ),
    ],
)
def test_a_turn_that_asks_several_things_is_split_into_them(text: str, expected: list[str]) -> None:
    assert parts(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Find a hotel in Paris for two nights",
        "Find flights next week to Paris",
        "hi",
        "book the first one for John",
        "Convert 100 euros to dollars. Thanks!",
    ],
)
def test_a_turn_that_asks_one_thing_is_one_part_its_own_text(text: str) -> None:
    assert parts(text) == [text]


def test_a_fragment_too_short_to_route_on_joins_its_neighbour() -> None:
    assert parts("Book a flight to Rome. Then. Email the invoice to Dana.") == [
        "Book a flight to Rome. Then.",
        "Email the invoice to Dana.",
    ]
    assert parts("Please. Book a flight to Rome. Email the invoice to Dana.") == [
        "Please. Book a flight to Rome.",
        "Email the invoice to Dana.",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Reserve o voo AZ 201 para Roma, depois envie o itinerário para a Dana e, por fim, converta 300 euros.",
            ["Reserve o voo AZ 201 para Roma", "envie o itinerário para a Dana", "converta 300 euros."],
        ),
        (
            "Busca trenes de Madrid a Barcelona y luego alquila un coche. ¿Necesito visado para Japón?",
            ["Busca trenes de Madrid a Barcelona", "alquila un coche.", "¿Necesito visado para Japón?"],
        ),
        (
            "Cherche un vol pour Montréal, puis montre-moi le plan des sièges. Ensuite, réserve un hôtel.",
            ["Cherche un vol pour Montréal", "montre-moi le plan des sièges.", "réserve un hôtel."],
        ),
        (
            "Cerca un hotel a Firenze e poi mostrami i dettagli. Infine, prenota il primo.",
            ["Cerca un hotel a Firenze", "mostrami i dettagli.", "prenota il primo."],
        ),
        (
            "Zeig meine Termine für morgen, und dann schick Anna eine E-Mail. Über das Wetter reden wir später.",
            ["Zeig meine Termine für morgen", "schick Anna eine E-Mail.", "Über das Wetter reden wir später."],
        ),
        (
            "帮我查一下明天从北京到上海的火车，然后在上海租一辆车。最后把300欧元换成美元。",
            ["帮我查一下明天从北京到上海的火车", "在上海租一辆车。", "把300欧元换成美元。"],
        ),
        (
            "大阪のホテルを三泊で探して、それから一番目のホテルの詳細を見せて。その後、web-2を停止して。",
            ["大阪のホテルを三泊で探して", "一番目のホテルの詳細を見せて。", "web-2を停止して。"],
        ),
    ],
)
def test_other_languages_split_at_their_own_sentence_ends_and_connectives(text: str, expected: list[str]) -> None:
    assert parts(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Encontre-me um hotel em Paris para duas noites",
        "Dov'è il mio ordine? Grazie.",
        "谢谢。",
        "好的，谢谢。然后预订航班。",
        "Prenota il volo, anche se costa di più",
        "Reserve um hotel em Roma, depois do concerto de sábado",
        "Reserva un hotel en Madrid, después de la reunión con Ana",
        "Ich brauche ein Hotel, auch wenn es teuer ist",
        "Then. 谢谢",
    ],
)
def test_other_languages_keep_one_request_whole(text: str) -> None:
    assert parts(text) == [text]
