"""The sparse (BM25-like) encoder and the readable function text: pure functions, no model."""

from __future__ import annotations

import time
import zlib
from typing import Any

import pytest

from router.catalog.functions import FunctionDef, parse_function
from router.retrieval.sparse import (
    AVERAGE_LENGTH,
    K1,
    Frequencies,
    affirmed,
    document_terms,
    document_vector,
    pack_terms,
    query_terms,
    query_vector,
    split_identifier,
    term_id,
    terms,
    unpack_terms,
)
from router.retrieval.texts import DEFAULT_TEMPLATE, TEMPLATES, TOKEN_BUDGET, estimate_tokens, readable, readable_schema


def function(name: str, description: str = "", **properties: str) -> FunctionDef:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {p: {"type": "string", "description": d} for p, d in properties.items()},
    }
    return parse_function({"name": name, "description": description, "parameters": schema}, where="test")


def weights(vector: Any) -> dict[int, float]:
    return dict(zip(vector.indices, vector.values, strict=True))


@pytest.mark.parametrize(
    ("identifier", "words"),
    [
        ("get_current_weather", ["get", "current", "weather"]),
        ("getCurrentWeather", ["get", "Current", "Weather"]),
        ("math.triangle_area_heron", ["math", "triangle", "area", "heron"]),
        ("getHTTPResponse_v2", ["get", "HTTP", "Response", "v", "2"]),
        ("Homes_2_ScheduleVisit", ["Homes", "2", "Schedule", "Visit"]),
        ("kebab-case-name", ["kebab", "case", "name"]),
        ("", []),
    ],
)
def test_identifiers_split_the_way_people_read_them(identifier: str, words: list[str]) -> None:
    assert split_identifier(identifier) == words


def test_readable_names() -> None:
    assert readable("get_current_weather") == "get current weather"
    assert readable("finance.fetchGDP") == "finance fetch GDP"


def test_terms_drop_stop_words_and_meet_at_one_stem() -> None:
    assert terms("What is the weather in Paris?") == ["weather", "paris"]
    # Question words ask; they name nothing a function does ("Where the money goes." in a description).
    assert terms("Where is my package? When does it arrive, and why so late?") == ["packag", "arriv", "so", "lat"]
    assert len({*terms("calculate"), *terms("calculates"), *terms("calculated"), *terms("calculating")}) == 1
    assert terms("flights") == terms("flight")
    assert terms("class") == ["class"]  # "ss" is no plural


def test_query_terms_add_bigrams_and_whole_identifiers() -> None:
    found = query_terms("call get_current_weather for the final velocity")
    assert "final velocity" in found
    assert "get_current_weather" in found
    assert len(found) == len(set(found))


def test_query_vector_weights_each_term_once() -> None:
    vector = query_vector("weather in Paris")
    assert vector.indices == sorted(vector.indices)
    assert vector.values == [1.0, 1.0, 1.0]  # weather, paris, "weather paris"
    assert query_vector("weather in Paris, Paris").values == [1.0] * 4  # repeats add "paris paris", not weight


def test_query_vector_of_stop_words_is_empty() -> None:
    assert query_vector("what is it?").indices == []


def test_with_its_catalogs_frequencies_a_rarer_word_weighs_more_and_an_unknown_one_nothing() -> None:
    catalog = [
        function("get_weather", "Current weather for a city."),
        function("get_forecast", "Weather forecast for a city."),
        function("book_hotel", "Book a hotel room in a city."),
    ]
    frequencies = Frequencies.of([unpack_terms(pack_terms(document_vector(f))) for f in catalog])
    assert frequencies.functions == 3

    vector = query_vector("hotel weather city zeppelin", frequencies)
    weight = dict(zip(vector.indices, vector.values, strict=True))
    assert term_id("zeppelin") not in weight  # no function holds it
    assert weight[term_id("hotel")] > weight[term_id("weather")] > weight[term_id("city")] > 0
    assert query_vector("zeppelin", frequencies).indices == []


def test_frequencies_moved_by_a_change_equal_those_counted_afresh() -> None:
    def terms(f: FunctionDef) -> Any:
        return unpack_terms(pack_terms(document_vector(f)))

    weather = function("get_weather", "Current weather for a city.")
    forecast = function("get_forecast", "Weather forecast for a city.")
    hotel = function("book_hotel", "Book a hotel room in a city.")
    flight = function("book_flight", "Book a flight to a city.")
    reworded = function("get_forecast", "Rain and sun for the coming days.")
    before = Frequencies.of([terms(weather), terms(forecast), terms(hotel)])

    moved = before.changed([terms(forecast), terms(hotel)], [terms(reworded), terms(flight)])

    afresh = Frequencies.of([terms(weather), terms(reworded), terms(flight)])
    assert moved.functions == afresh.functions == 3
    assert moved.terms.tolist() == afresh.terms.tolist()
    assert moved.counts.tolist() == afresh.counts.tolist()
    assert term_id("hotel") not in moved.terms.tolist()  # no function holds it any more


def test_an_empty_catalog_holds_no_term() -> None:
    assert query_vector("weather", Frequencies.of([])).indices == []


def test_term_ids_are_stable_crc32() -> None:
    assert term_id("weather") == zlib.crc32(b"weather") == 1_288_754_030
    assert all(0 <= term_id(t) < 2**32 for t in ("a", "ünïcode", "x y"))


def test_document_vector_is_deterministic_and_sorted() -> None:
    definition = function("get_weather", "Current weather for a city.", city="City name")
    first, second = document_vector(definition), document_vector(definition)
    assert first == second
    assert first.indices == sorted(first.indices)
    assert len(first.indices) == len(set(first.indices))


def test_denied_words_are_no_evidence() -> None:
    status = function("get_flight_status", "Status of a flight; not for finding or booking flights.")
    assert "find" not in document_terms(status)
    assert "book" not in document_terms(status)
    assert affirmed("Search offers. It does not reserve seats, nor charge.") == "Search offers. It does  , nor charge."


def test_document_terms_cover_name_description_and_parameters() -> None:
    found = document_terms(function("book_flight", "Reserve a seat.", departure_airport="IATA code"))
    assert {"book", "flight", "book flight", "book_flight", "reserv", "seat", "departur", "airport", "iata"} <= set(
        found
    )
    assert found.count("book flight") == 2  # the name counts double


def test_name_words_weigh_more_than_description_words() -> None:
    vector = weights(document_vector(function("search_hotels", "Find rooms to stay in.")))
    assert vector[term_id("hotel")] > vector[term_id("room")]


def test_term_frequency_saturates_and_long_documents_weigh_less() -> None:
    short = weights(document_vector(function("x", "alpha")))
    repeated = weights(document_vector(function("x", "alpha " * 50)))
    long = weights(document_vector(function("x", "alpha " + "filler " * 200)))
    assert repeated[term_id("alpha")] < K1 + 1
    assert short[term_id("alpha")] < repeated[term_id("alpha")]
    assert long[term_id("alpha")] < short[term_id("alpha")]
    assert AVERAGE_LENGTH > 0


def test_readable_schema_uses_words_and_parameter_names() -> None:
    text = readable_schema(function("get_current_weather", "Current weather.", unit_system="metric", city="Name"))
    assert text == "get current weather. Current weather.\nInputs: unit system, city"
    assert readable_schema(function("ping")) == "ping"


def test_readable_schema_fits_the_model_window() -> None:
    many = {f"parameter_number_{i}": "what it means" for i in range(200)}
    text = readable_schema(function("huge", "word " * 400, **many))
    assert estimate_tokens(text) <= TOKEN_BUDGET
    assert text.startswith("huge. word")
    assert "parameter number 0" in text
    assert "parameter number 199" not in text


def test_templates_keep_the_old_ones_and_default_to_the_readable_one() -> None:
    assert DEFAULT_TEMPLATE == "readable_schema"
    assert {"name_description", "name_description_parameters", "readable_schema"} <= set(TEMPLATES)


def test_whole_identifiers_start_where_a_word_starts() -> None:
    found = query_terms("ask getCurrentWeather and math.triangle_area about LeBron on PlayStation")
    assert {"getcurrentweather", "math.triangle_area"} <= set(found)
    assert not {"ebron", "laystation"} & set(found)  # no identifier starts inside a word


def test_a_request_of_one_long_word_is_read_in_linear_time() -> None:
    # Backtracking once made 20,000 letters take 4.6 s on the event loop; the limit on a text is 100,000.
    started = time.perf_counter()
    for word in ("a" * 100_000, "A" * 100_000, "a1" * 50_000, "aB" * 50_000, "a." * 50_000):
        query_terms(word)
    assert time.perf_counter() - started < 5
