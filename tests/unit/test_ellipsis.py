"""Which turns only change the values of the request before them."""

from __future__ import annotations

import pytest

from router.retrieval.ellipsis import elliptical


@pytest.mark.parametrize(
    "text",
    [
        "And AF 456?",
        "and what about Tuesday?",
        "What about size L?",
        "How about Monday then?",
        "Now do the same for Paris",
        "Same for the way back on Sunday",
        "Do the same with Maria on Friday",
        "OK, now the same for the recommendations service",
        "And for the payments service?",
        "And the one from last week?",
        "Also for the EU region",
        "Again for Lisbon, please",
        "and af 456?",
        "and i-0a12bc35 too",
        "And tomorrow?",
        "Thanks! What about Tuesday?",
        "Please do the same for Paris",
        "OK. And for tomorrow?",
        "And Madrid?",
        "And Cambodia after that, maybe 5 days?",
        "Thanks! Now please do that for Mary as well.",
        "Do it again",
        "Repeat that for the staging cluster",
    ],
)
def test_a_turn_that_only_changes_values_is_elliptical(text: str) -> None:
    assert elliptical(text)


@pytest.mark.parametrize(
    "text",
    [
        "And book it",  # an action of its own
        "And then email Dana the report",
        "And cancel the other one",
        "Is it on time?",
        "Cancel that",
        "Book the first one for John",
        "Now that the tank is full, start the engine",
        "Also, at your earliest convenience, show me my messages",
        "Android phones under 300 euros",
        "Sameday delivery to Porto?",
        "What is the weather in Oslo?",
        "And I'd like to book the first one for John",
        "And Book it",
        "And this time book it",
        "And on second thought, cancel it",
        "And by the way, show my messages",
        "Then for each result, send an email to Dana",
        "Now for the hard part: delete all my files",
        "How about you book the first one?",
        "Again, the app crashes when I log in",
        "Same-day delivery to Porto?",
        "How about booking the first one for John?",
        "What about cancelling it?",
        "And next, pause the music",
        "And by the way, unsubscribe me from the newsletter",
        "And for dessert I want tiramisu",
        "And Im done",
        "Do that math for me: 17 times 23",
        "Yes, do it",
        "OK do it.",
        "Do this for me and book the hotel for Mary",
    ],
)
def test_a_turn_with_its_own_action_is_not(text: str) -> None:
    assert not elliptical(text)
