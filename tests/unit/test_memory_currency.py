"""Memories stay current: when a time-bound statement ends, and which statement replaces which."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from router.sessions.expiry import expires_at
from router.sessions.slots import slot_of
from tests.everyday_statements import BOUNDED, NOT_UPDATES, SAID_ON, UPDATES

SAID = datetime(*SAID_ON, 15, 30, tzinfo=UTC)


def replaces(older: str, newer: str) -> bool:
    old, new = slot_of(older), slot_of(newer)
    return old is not None and new is not None and old[0] == new[0] and old[1] != new[1]


@pytest.mark.parametrize(("statement", "end"), BOUNDED.items())
def test_a_time_bound_statement_ends_with_the_day_it_names(statement: str, end: tuple[int, int, int]) -> None:
    until = expires_at(statement, now=SAID)
    assert until is not None, statement
    assert datetime.fromtimestamp(until, UTC).date() == date(*end), statement
    assert until > SAID.timestamp()


@pytest.mark.parametrize(
    "statement",
    [
        "Our anniversary is June 12.",
        "My dad's birthday is on October 3rd.",
        "Never schedule meetings on Fridays.",
        "My yoga class is on Monday evenings.",
        "I live in Porto.",
    ],
)
def test_facts_habits_and_yearly_dates_do_not_end(statement: str) -> None:
    assert expires_at(statement, now=SAID) is None


def test_a_past_time_ends_before_now() -> None:
    until = expires_at("We met yesterday.", now=SAID)
    assert until is not None
    assert until < SAID.timestamp()


def test_updates_replace_and_alike_statements_do_not() -> None:
    missed = [pair for pair in UPDATES if not replaces(*pair)]
    merged = [pair for pair in NOT_UPDATES if replaces(*pair)]
    assert merged == [], "a wrong merge loses something true"
    assert len(missed) <= len(UPDATES) * 0.1, missed


def test_the_same_value_said_again_replaces_nothing() -> None:
    assert not replaces("I live in Lisbon.", "We live in Lisbon.")
    assert slot_of("I like jazz.") is None
