"""When the stored requests near a new one outvote a function's example (pure logic, no model)."""

from __future__ import annotations

import numpy as np
import pytest

from router.retrieval.voting import SAME, Reach, Stored, agree, overruled

HOTEL = np.eye(4)[0]
# Another request of the same kind: most of its meaning is the hotel request's.
HOTEL_AGAIN = np.array([0.9, 0.436, 0.0, 0.0])
WEATHER = np.eye(4)[2]


def run(name: str, similarity: float, vector: np.ndarray, together: tuple[str, ...] = ()) -> Stored:
    return Stored(name, similarity, vector.tolist(), together)


def test_runs_that_asked_the_same_outvote_a_single_other_call() -> None:
    stored = [
        run("book_hotel", 0.9, HOTEL),
        run("get_airport_status", 0.85, HOTEL_AGAIN),  # the mistake: a run that called it for the same request
        run("book_hotel", 0.8, HOTEL_AGAIN),
    ]
    assert overruled(stored) == {"get_airport_status"}


def test_functions_a_run_called_together_are_not_outvoted() -> None:
    stored = [
        run("search_hotels", 0.9, HOTEL, ("book_hotel",)),
        run("book_hotel", 0.85, HOTEL_AGAIN, ("search_hotels",)),
        run("search_hotels", 0.8, HOTEL_AGAIN),
    ]
    assert overruled(stored) == set()


def test_a_nearer_request_is_not_outvoted_by_farther_ones() -> None:
    stored = [
        run("get_airport_status", 0.95, HOTEL),
        run("book_hotel", 0.85, HOTEL_AGAIN),
        run("book_hotel", 0.8, HOTEL_AGAIN),
    ]
    assert overruled(stored) == set()


def test_runs_that_asked_something_else_do_not_outvote() -> None:
    # Near the new request, but not to each other: they asked different things of it.
    stored = [
        run("book_hotel", 0.9, HOTEL),
        run("get_weather", 0.85, WEATHER),
        run("book_hotel", 0.8, HOTEL_AGAIN),
    ]
    assert overruled(stored) == set()


def test_as_many_runs_do_not_outvote() -> None:
    stored = [run("book_hotel", 0.9, HOTEL), run("get_airport_status", 0.85, HOTEL_AGAIN)]
    assert overruled(stored) == set()


def test_only_runs_that_ask_the_same_as_the_new_request_vote() -> None:
    # Far from the new request, however many, they do not count as votes.
    stored = [
        run("get_airport_status", 0.7, HOTEL),
        run("book_hotel", 0.75, HOTEL_AGAIN),
        *[run("book_hotel", 0.3, HOTEL_AGAIN) for _ in range(3)],
    ]
    assert overruled(stored) == set()


def test_a_function_whose_own_closest_run_called_both_is_not_outvoted() -> None:
    # Its closest run is beyond SAME (it speaks through a second one), and says f was called beside it.
    stored = [
        run("f", 0.7, HOTEL_AGAIN),
        run("f", 0.65, HOTEL_AGAIN),
        run("g", 0.55, HOTEL, ("f",)),
        run("g", 0.5, HOTEL, ("f",)),
    ]
    assert overruled(stored) == set()


def test_runs_without_vectors_never_outvote() -> None:
    stored = [Stored("f", 0.9, None), Stored("g", 0.85, None), Stored("f", 0.8, None)]
    assert overruled(stored) == set()


def test_a_model_that_puts_requests_closer_needs_them_closer_to_ask_the_same() -> None:
    # The mistaken run's request lies at cosine 0.85 from the others': the same request for all-MiniLM-L6-v2,
    # an unrelated one for multilingual-e5-small, which puts unrelated requests near 0.8.
    beside = np.array([0.85, np.sqrt(1 - 0.85**2), 0.0, 0.0])
    stored = [run("book_hotel", 0.9, HOTEL), run("get_airport_status", 0.7, beside), run("book_hotel", 0.8, HOTEL)]
    assert overruled(stored) == {"get_airport_status"}
    assert overruled(stored, Reach(0.9)) == set()


def test_a_cosine_at_the_models_same_request_reads_as_all_minilms() -> None:
    assert Reach().scaled(0.73) == 0.73
    assert Reach(0.9).scaled(0.9) == pytest.approx(SAME)
    assert Reach(0.9).scaled(0.8) < 0.3 < Reach().scaled(0.8)


def test_runs_that_agree_reach_wider_only_on_the_default_models_scale() -> None:
    # Two stored requests at 0.5: beyond one run's reach, within two agreeing ones' (all-MiniLM-L6-v2).
    assert agree([0.5, 0.5])
    assert not agree([0.5])
    # Another model's cosines, read on that scale, are exact near its same-request cosine only.
    assert not agree([0.5, 0.5], Reach(0.9))
    assert agree([0.7], Reach(0.9))


def test_a_same_request_cosine_is_between_0_and_1() -> None:
    with pytest.raises(ValueError, match="same-request"):
        Reach(1.0)
