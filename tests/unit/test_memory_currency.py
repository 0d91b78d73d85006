"""Memories stay current: when a time-bound statement ends, and which statement replaces which."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from router.sessions.expiry import expires_at
from router.sessions.extraction import StatementExtractor
from router.sessions.slots import contradicts, forgets, replaces, slot_of
from tests.everyday_statements import BOUNDED, NOT_UPDATES, SAID_ON, UPDATES

SAID = datetime(*SAID_ON, 15, 30, tzinfo=UTC)


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
    unkept = [text for pair in UPDATES for text in pair if not StatementExtractor().extract(text)]
    assert unkept == [], "an update that is not kept replaces nothing"


def test_the_same_value_said_again_replaces_nothing() -> None:
    assert not replaces("I live in Lisbon.", "We live in Lisbon.")
    assert slot_of("I like jazz.") is None


@pytest.mark.parametrize(
    "statement",
    [
        "I have been married 12 years.",
        "I have 3 decades of experience.",
        "I have 4 novels published.",
        "I live on the 5th floor.",
        "I have been vegan for two months.",
        "I have lived in Lisbon for 6 months.",
        "We are in Lisbon for 99999999999 days.",
    ],
)
def test_numbers_and_past_spans_set_no_end(statement: str) -> None:
    assert expires_at(statement, now=SAID) is None


@pytest.mark.parametrize(
    "statement",
    [
        "We moved to Lisbon on March 3.",
        "I've been vegetarian since January 5th.",
        "I started at Fabrikam on the 1st of June.",
        "We got married on June 12, 2015.",
        "I moved to Lisbon in March 2024.",
    ],
)
def test_the_date_of_a_change_that_happened_is_no_end(statement: str) -> None:
    # Read as an end, a past date came back as next year's: kept a year, and replacing nothing.
    assert expires_at(statement, now=SAID) is None
    assert StatementExtractor().extract(statement) == [statement]


def test_the_day_named_first_decides_and_rolls_forward_to_a_month_that_has_it() -> None:
    def day(statement: str, now: datetime = SAID) -> date | None:
        until = expires_at(statement, now=now)
        return None if until is None else datetime.fromtimestamp(until, UTC).date()

    assert day("I'm away until July 3rd.") == date(2026, 7, 3)
    assert day("I'm on call until Friday, and on holiday next year.") == date(2026, 6, 12)
    april = datetime(2026, 4, 10, tzinfo=UTC)
    assert day("I'm away until the 31st.", april) == date(2026, 5, 31)
    monday = datetime(2026, 6, 8, tzinfo=UTC)
    assert day("I'm off next Monday.", monday) == date(2026, 6, 15)


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("I prefer window seats.", "I hate middle seats."),
        ("I prefer window seats.", "Never book me a middle seat."),
        ("My daughter is Ana.", "My daughter is 7 years old."),
        ("My manager is Sarah.", "My manager is on leave."),
        ("I work at Google.", "I work with Python every day."),
        ("I work at Google.", "I joined the gym."),
        ("I live in Porto.", "I live in a flat with two cats."),
        ("I am vegetarian.", "I am not vegan."),
    ],
)
def test_statements_that_say_no_new_value_replace_nothing(older: str, newer: str) -> None:
    assert not replaces(older, newer)


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("I'm allergic to peanuts.", "I'm not allergic to peanuts anymore."),
        ("I like cats.", "I don't like cats."),
        ("I live in Porto.", "I no longer live in Porto."),
        ("I never fly on Fridays.", "I fly on Fridays."),
        ("I can't eat gluten.", "I can eat gluten."),
        ("I cannot drive.", "I can drive."),
    ],
)
def test_a_statement_and_its_denial_contradict(older: str, newer: str) -> None:
    assert contradicts(older, newer)
    assert contradicts(newer, older)


def test_alike_statements_and_their_denials_do_not_contradict_each_other() -> None:
    assert not contradicts("I like cats.", "I like dogs.")
    assert not contradicts("I'm not vegan.", "I'm not vegan any more.")
    assert [pair for pair in NOT_UPDATES if contradicts(*pair)] == []


@pytest.mark.parametrize(
    ("statement", "end"),
    [
        ("I'm on call this week since Ana is away.", (2026, 6, 14)),
        ("I switched to decaf until next Monday.", (2026, 6, 15)),
        ("I'm in Rome until June 20 since my flight moved.", (2026, 6, 20)),
    ],
)
def test_a_change_word_does_not_keep_a_time_bound_statement_for_good(statement: str, end: tuple[int, int, int]) -> None:
    until = expires_at(statement, now=SAID)
    assert until is not None
    assert datetime.fromtimestamp(until, UTC).date() == date(*end)


MEMORIES = [
    "I live in Porto.",
    "I'm not allergic to shellfish any more.",
    "Always ask me before booking anything.",
    "I live near the beach.",
    "I'm allergic to peanuts.",
    "I prefer aisle seats.",
    "I work at Contoso.",
    "My manager is Sarah.",
    "I'm vegetarian.",
    "My hotel budget is 120 euros.",
    "I like jazz.",
]


@pytest.mark.parametrize(
    ("request_text", "forgotten"),
    [
        ("I live in Porto", {"I live in Porto."}),
        ("my address", {"I live in Porto."}),
        ("my peanut allergy", {"I'm allergic to peanuts."}),
        ("my seat preference", {"I prefer aisle seats."}),
        ("my job", {"I work at Contoso."}),
        ("my diet", {"I'm vegetarian."}),
        ("my manager", {"My manager is Sarah."}),
        ("I live in Lisbon", set()),
        ("my dog", set()),
        # what the request does not say of the user, or says denied, or names beside a slot word
        ("my wife is allergic to peanuts", set()),
        ("I'm not vegetarian", set()),
        ("my email address", set()),
        ("my old job", set()),
        # several things at once, each part that says something of its own
        ("I live in Porto and work at Contoso", {"I live in Porto.", "I work at Contoso."}),
        ("my address and my diet", {"I live in Porto.", "I'm vegetarian."}),
        ("I like jazz and techno", {"I like jazz."}),
        # a topic reaches a denial too; "never mind" phrasings name nothing
        ("shellfish", {"I'm not allergic to shellfish any more."}),
        ("I asked", set()),
        ("I mentioned it", set()),
    ],
)
def test_a_forget_request_names_the_memories_it_holds_or_that_hold_it(request_text: str, forgotten: set[str]) -> None:
    named = {m for m in MEMORIES if forgets(request_text, m, (slot_of(m) or (None,))[0])}
    assert named == forgotten
