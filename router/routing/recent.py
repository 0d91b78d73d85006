"""A turn's recent context: the messages before it that say what the user was asking."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from router.common.messages import message_text
from router.retrieval.ellipsis import elliptical
from router.sessions.extraction import without_statements
from router.sessions.history import message_source


def recent_context(
    history: Sequence[Mapping[str, Any]], *, roles: Sequence[str], count: int, follows: bool
) -> list[str]:
    """The texts of a turn's recent context, oldest first.

    The last ``count`` messages of ``roles`` that hold text. A user's own message keeps what
    they asked, without the sentences that only say who they are ("I prefer aisle seats.":
    those come back as memories, and drew `get_seat_map` to every follow-up of a flight search).
    For a turn that ``follows`` the request before it ("And BA 12?"), the context reaches back
    past the messages that do the same to the request they all continue ("Status of LH 1234?").
    """
    if count <= 0:
        return []
    texts: list[str] = []
    for message in history:
        if message.get("role") not in roles:
            continue
        text = message_text(message)
        if message.get("role") == "user" and message_source(message) == "external":
            text = without_statements(text)
        if text:
            texts.append(text)
    start = max(len(texts) - count, 0)
    while follows and start > 0 and all(elliptical(text) for text in texts[start:]):
        start -= 1
    return texts[start:]
