"""A turn's recent context: what the user asked before it."""

from __future__ import annotations

from typing import Any

from router.routing.recent import recent_context


def said(role: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": text, **extra}


def test_the_context_is_the_last_messages_of_the_counted_roles() -> None:
    history = [said("user", "Find flights to Rome"), said("assistant", "Here they are"), said("user", "Book one")]
    assert recent_context(history, roles=("user",), count=2, follows=False) == ["Find flights to Rome", "Book one"]
    assert recent_context(history, roles=("user",), count=1, follows=False) == ["Book one"]
    assert recent_context(history, roles=("user",), count=0, follows=False) == []


def test_a_users_statements_about_themselves_leave_their_messages() -> None:
    history = [said("user", "Find me a flight to Rome. I prefer aisle seats."), said("user", "I am Alex.")]
    assert recent_context(history, roles=("user",), count=2, follows=False) == ["Find me a flight to Rome."]


def test_only_what_the_user_said_is_read_for_statements() -> None:
    history = [
        said("assistant", "I found three flights to Rome."),
        said("user", "I prefer aisle seats.", source="history"),  # loaded, not said in this run
    ]
    texts = recent_context(history, roles=("user", "assistant"), count=2, follows=False)
    assert texts == ["I found three flights to Rome.", "I prefer aisle seats."]


def test_a_follow_up_reaches_back_to_the_request_its_predecessors_continue() -> None:
    history = [said("user", "What's the status of flight LH 1234?"), said("user", "And AF 456?")]
    history.append(said("user", "And BA 12?"))
    texts = recent_context(history, roles=("user",), count=2, follows=True)
    assert texts == ["What's the status of flight LH 1234?", "And AF 456?", "And BA 12?"]
    assert recent_context(history, roles=("user",), count=2, follows=False) == ["And AF 456?", "And BA 12?"]


def test_a_follow_up_reaches_past_acknowledgements_and_other_roles() -> None:
    history = [said("user", "What's the status of flight LH 1234?"), said("assistant", "Delayed 20 minutes.")]
    history += [said("user", "And AF 456?"), said("user", "Thanks!")]
    texts = recent_context(history, roles=("user", "assistant"), count=2, follows=True)
    assert texts[0] == "What's the status of flight LH 1234?"


def test_a_message_left_empty_does_not_let_an_older_one_in() -> None:
    history = [said("user", "Book a flight to Rome"), said("user", "I am Alex.")]
    assert recent_context(history, roles=("user",), count=1, follows=False) == []
