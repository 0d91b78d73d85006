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
