"""A turn's recent context: the messages before it that say what the user was asking."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from router.common.messages import message_text
from router.retrieval.ellipsis import elliptical
from router.retrieval.parts import MIN_WORDS
from router.sessions.extraction import said_by_user, without_statements


def recent_context(
    history: Sequence[Mapping[str, Any]], *, roles: Sequence[str], count: int, follows: bool
) -> list[str]:
    """The texts of a turn's recent context, oldest first.

    The last ``count`` messages of ``roles`` that hold text. A user's own message keeps what
    they asked, without the sentences that only say who they are ("I prefer aisle seats.":
    those come back as memories, and drew `get_seat_map` to every follow-up of a flight search).
    For a turn that ``follows`` the request before it ("And BA 12?"), the context reaches further
    back, past the messages that do the same ("And AF 456?") or say too little to route on
    ("Thanks!"), to a request of the user's ("What's the status of LH 1234?").
    """
    if count <= 0:
        return []
    said = [(m, text) for m in history if m.get("role") in roles and (text := message_text(m))]
    kept: list[str] = []
    asked = False
    for position, (message, text) in enumerate(reversed(said)):
        if position >= count and (asked or not follows):
            break
        text = without_statements(text) if said_by_user(message) else text
        if text:
            kept.append(text)
            asked = asked or (message.get("role") == "user" and not elliptical(text) and len(text.split()) >= MIN_WORDS)
    return kept[::-1]
