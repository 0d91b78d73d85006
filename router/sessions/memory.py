"""Memories: durable facts the user stated, kept per scope and namespace, found again by similarity.

What becomes a memory is decided by ``router.sessions.extraction``.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from router.embedding import Vectors
from router.storage.base import Collection, CollectionSpec, PointData, Storage

__all__ = ["ANY_NAMESPACE", "Memory", "MemoryStore", "memory_context", "memory_spec", "scope_of"]

_IDS = uuid.UUID("9a7b6c5d-4e3f-4a1b-8c2d-1e0f9a8b7c6d")
# Memories posted without a namespace hold in every namespace of their scope.
ANY_NAMESPACE = "*"


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
