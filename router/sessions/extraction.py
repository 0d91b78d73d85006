"""What becomes a memory: durable statements of external user input.

Memories come from external user input only: never from assistant text, nor from
messages that were themselves loaded from history or added by a context provider, so
the router never feeds its own output back into what it remembers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from router.messages import message_text
from router.sessions.history import message_source

__all__ = ["MemoryExtractor", "StatementExtractor", "memory_candidates"]

_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_FIRST_PERSON = re.compile(
    r"\b(i am|i'm|i was|i have|i've|my|i prefer|i'd rather|i like|i love|i enjoy|i hate|i dislike|"
    r"i don't like|i do not like|i can't|i cannot|i usually|i always|i never|i live|i work|i study|"
    r"call me|remember|we are|we're|our)\b",
    re.IGNORECASE,
)
_REMEMBER = re.compile(r"^(please\s+)?(remember|note|keep in mind)\s+(that\s+)?", re.IGNORECASE)
_REQUEST = re.compile(
    r"^(can|could|would|will) you\b|^(please\s+)?(find|book|show|get|send|search|tell)\b", re.IGNORECASE
)


class MemoryExtractor(Protocol):
    """Turns one user message into the facts worth remembering."""

    def extract(self, text: str) -> list[str]:
        """The memories stated in ``text`` (may be empty)."""


class StatementExtractor:
    """Keeps first-person statements (facts, preferences, standing instructions).

    Questions and one-off requests ("can you book ...") are skipped. A model-based
    extractor can replace this one through the ``MemoryExtractor`` protocol.
    """

    def __init__(self, *, min_words: int = 3, max_chars: int = 300) -> None:
        self._min_words = min_words
        self._max_chars = max_chars

    def extract(self, text: str) -> list[str]:
        """The first-person statements of ``text``."""
        found: list[str] = []
        for raw in _SENTENCE.split(text):
            sentence = " ".join(raw.split()).strip(" -*")
            if not sentence or sentence.endswith("?") or _REQUEST.search(sentence):
                continue
            if not _FIRST_PERSON.search(sentence) or len(sentence.split()) < self._min_words:
                continue
            sentence = _REMEMBER.sub("", sentence)
            sentence = sentence[0].upper() + sentence[1:]
            if len(sentence) <= self._max_chars and sentence not in found:
                found.append(sentence)
        return found


def memory_candidates(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """The texts memories may be taken from: external user messages only."""
    texts = (message_text(m) for m in messages if m.get("role") == "user" and message_source(m) == "external")
    return [t for t in texts if t]
