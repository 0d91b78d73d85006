"""Memories: durable facts the user stated, found again when they matter.

Memories come from external user input only: never from assistant text, nor from
messages that were themselves loaded from history or added by a context provider, so
the router never feeds its own output back into what it remembers.
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from router.embedding import Vectors
from router.history import message_source
from router.retrieval import message_text
from router.storage.base import Collection, CollectionSpec, PointData, Storage

_IDS = uuid.UUID("9a7b6c5d-4e3f-4a1b-8c2d-1e0f9a8b7c6d")
# Memories posted without a namespace hold in every namespace of their scope.
ANY_NAMESPACE = "*"
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


def scope_of(*, session_id: str | None, user_id: str | None) -> str | None:
    """Memories belong to the user when known (across sessions), otherwise to the session."""
    if user_id is not None:
        return f"user:{user_id}"
    return f"session:{session_id}" if session_id is not None else None


@dataclass(frozen=True)
class Memory:
    """A remembered fact and how relevant it is to the turn."""

    text: str
    score: float


def memory_spec(model: str, dimension: int) -> CollectionSpec:
    """The memories collection of one embedding model (vectors of two models never mix)."""
    key = hashlib.sha256(f"{model}|{dimension}".encode()).hexdigest()[:12]
    return CollectionSpec(
        name=f"memories-{key}", dense_size=dimension, tenant_field="scope", keyword_fields=("namespace",)
    )


class MemoryStore:
    """Memories by scope and namespace, deduplicated exactly and by meaning.

    Args:
        collection: the memories collection of the embedding model in use.
        duplicate_score: a new memory this similar to a stored one is the same memory.
    """

    def __init__(self, collection: Collection, *, duplicate_score: float = 0.95) -> None:
        self._collection = collection
        self._duplicate = duplicate_score

    @classmethod
    def open(cls, storage: Storage, *, model: str, dimension: int) -> MemoryStore:
        """Open the memories collection of ``model``."""
        return cls(storage.collection(memory_spec(model, dimension)))

    def add(self, scope: str, namespace: str, texts: Sequence[str], vectors: Vectors, *, session_id: str | None) -> int:
        """Store new memories; returns how many were new."""
        points: list[PointData] = []
        for text, vector in zip(texts, vectors, strict=True):
            near = self._collection.search(
                dense=vector.tolist(), match={"scope": scope, "namespace": namespace}, limit=1
            )
            if near and near[0].score >= self._duplicate:
                continue
            key = f"{scope}\x00{namespace}\x00{' '.join(text.lower().split())}"
            payload: dict[str, Any] = {"scope": scope, "namespace": namespace, "text": text}
            payload.update(session_id=session_id, created_at=time.time())
            points.append(PointData(id=str(uuid.uuid5(_IDS, key)), payload=payload, dense=vector.tolist()))
        self._collection.upsert(points)
        return len(points)

    def search(
        self, scope: str, namespace: str, vector: Sequence[float], *, limit: int, min_score: float
    ) -> list[Memory]:
        """The memories of the scope most similar to ``vector``, above ``min_score``."""
        where = {"scope": scope, "namespace": [namespace, ANY_NAMESPACE]}
        hits = self._collection.search(dense=vector, match=where, limit=limit)
        return [Memory(h.payload["text"], h.score) for h in hits if h.score >= min_score]

    def forget(self, scope: str) -> None:
        """Delete every memory of a scope."""
        self._collection.delete_where({"scope": scope})

    def all(self, scope: str, namespace: str) -> list[str]:
        """Every memory text of a scope."""
        return [r.payload["text"] for r in self._collection.scroll({"scope": scope, "namespace": namespace})]


def memory_context(memories: Sequence[Memory]) -> str:
    """Ready-to-use context text for the model (empty when there is nothing to say)."""
    if not memories:
        return ""
    lines = "\n".join(f"- {m.text}" for m in memories)
    return f"Relevant things the user said before, most relevant first:\n{lines}"
