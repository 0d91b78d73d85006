"""The text of chat messages, as routing, usage learning and memories read it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def message_text(message: Mapping[str, Any]) -> str:
    """The plain text of a message: its string content, or its text parts joined."""
    content = message.get("content")
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
        return " ".join(p.strip() for p in parts if p.strip())
    return ""


def context_texts(messages: Iterable[Mapping[str, Any]], *, roles: Sequence[str]) -> list[str]:
    """The non-empty texts of the messages whose role counts for routing."""
    texts = (message_text(m) for m in messages if m.get("role") in roles)
    return [t for t in texts if t]


def results_only(message: Mapping[str, Any]) -> bool:
    """Whether a message holds tool results and nothing else (Anthropic's ``tool_result`` blocks in a user turn)."""
    content = message.get("content")
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(p, Mapping) and p.get("type") == "tool_result" for p in content)
    )
