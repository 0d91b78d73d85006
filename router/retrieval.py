"""Choosing the functions that matter for a turn."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from router.catalog import FunctionDef
from router.functions import ScoredFunction


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


def fuse(new: Sequence[ScoredFunction], recent: Sequence[ScoredFunction], *, weight: float) -> list[ScoredFunction]:
    """Rank by the new turn's similarity, nudged by the recent context's.

    Each function scores ``(s_new + weight * s_recent) / (1 + weight)``: a weighted mean of
    cosine similarities, so scores keep their scale. The new turn leads; the recent
    context breaks near-ties and lifts functions a follow-up only implies. A function
    missing from one candidate list gets that list's lowest score (an upper bound of its own).
    """
    if not recent or weight == 0:
        return list(new)
    floor_new = new[-1].score if new else 0.0
    floor_recent = recent[-1].score
    by_name: dict[str, FunctionDef] = {}
    s_new: dict[str, float] = {}
    s_recent: dict[str, float] = {}
    for found in new:
        by_name[found.function.name] = found.function
        s_new[found.function.name] = found.score
    for found in recent:
        by_name.setdefault(found.function.name, found.function)
        s_recent[found.function.name] = found.score
    fused = [
        ScoredFunction(
            function,
            (s_new.get(name, floor_new) + weight * s_recent.get(name, floor_recent)) / (1 + weight),
        )
        for name, function in by_name.items()
    ]
    return sorted(fused, key=lambda f: f.score, reverse=True)
