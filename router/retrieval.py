"""Choosing the functions that matter for a turn."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from router.functions import ActiveIndex, ScoredFunction


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


async def search_functions(
    index: ActiveIndex,
    namespace: str,
    context: str,
    *,
    limit: int,
    min_score: float | None = None,
) -> list[ScoredFunction]:
    """The ``limit`` functions of ``namespace`` closest to ``context``, best first."""
    vector = (await index.embedder.embed([context]))[0]
    found: list[ScoredFunction] = await asyncio.to_thread(index.store.search, namespace, vector.tolist(), limit=limit)
    if min_score is not None:
        found = [f for f in found if f.score >= min_score]
    return found
