"""What a memory is: its record as stored, its scope, and the collection of one model's memories.

A memory belongs to a scope (a user across sessions, or one session) and holds in a namespace,
or in every namespace (``*``). It holds until a newer statement supersedes it or its time ends.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from router.embedding.batching import pack
from router.sessions.slots import slot_of
from router.storage.base import CollectionSpec, PointData, Record

# Memories posted without a namespace hold in every namespace of their scope.
ANY_NAMESPACE = "*"


def user_scope(user_id: str) -> str:
    """The scope of a user's memories (across their sessions)."""
    return f"user:{user_id}"


def scope_of(*, session_id: str | None, user_id: str | None) -> str | None:
    """Memories belong to the user when known (across sessions), otherwise to the session."""
    if user_id is not None:
        return user_scope(user_id)
    return f"session:{session_id}" if session_id is not None else None


@dataclass(frozen=True)
class Memory:
    """A remembered fact and how relevant it is to the turn."""

    text: str
    score: float


@dataclass(frozen=True)
class StoredMemory:
    """A memory as stored: what it says, where it holds, when and from which session it came.

    Attributes:
        expires_at: when a time-bound memory stops holding (Unix seconds), if it is one.
        superseded_by: the id of the newer memory that replaced it, if one did.
        replaced_in: the namespaces where a newer statement replaced it, or the user had it
            forgotten: a memory held in every namespace (``*``) is no other tenant's to supersede.
    """

    id: str
    text: str
    namespace: str
    created_at: float
    session_id: str | None
    expires_at: float | None = None
    superseded_by: str | None = None
    replaced_in: tuple[str, ...] = ()

    def current(self, now: float) -> bool:
        """Whether it still holds: neither replaced nor past its end."""
        return holds(vars(self), now)


@dataclass(frozen=True)
class MemoryChanges:
    """What storing a run did to the memories of its scope."""

    added: int = 0
    updated: int = 0
    expired: int = 0
    forgotten: int = 0


@dataclass(frozen=True)
class MemoryRows:
    """A scope's memories with their vectors, ready to rank (rows of ``vectors`` match ``texts``)."""

    texts: list[str]
    vectors: np.ndarray


def memory_spec(model: str, dimension: int) -> CollectionSpec:
    """The memories collection of one embedding model (vectors of two models never mix)."""
    key = hashlib.sha256(f"{model}|{dimension}".encode()).hexdigest()[:12]
    return CollectionSpec(
        name=f"memories-{key}", dense_size=dimension, tenant_field="scope", keyword_fields=("namespace",)
    )


def from_record(record: Record) -> StoredMemory:
    p = record.payload
    fields = (p.get("namespace", ANY_NAMESPACE), p.get("created_at", 0.0), p.get("session_id"), p.get("expires_at"))
    return StoredMemory(record.id, p["text"], *fields, p.get("superseded_by"), tuple(p.get("replaced_in", ())))


def to_point(scope: str, memory: StoredMemory, vector: np.ndarray) -> PointData:
    payload: dict[str, Any] = {"scope": scope, "namespace": memory.namespace, "text": memory.text}
    payload |= {"session_id": memory.session_id, "created_at": memory.created_at, "vector": pack(vector, "<f4")}
    if memory.expires_at is not None:
        payload["expires_at"] = memory.expires_at
    if memory.superseded_by is not None:
        payload["superseded_by"] = memory.superseded_by
    if memory.replaced_in:
        payload["replaced_in"] = list(memory.replaced_in)
    if (slot := slot_of(memory.text)) is not None:
        payload["slot"], payload["value"] = slot
    return PointData(id=memory.id, payload=payload, dense=vector.tolist())


def holds(payload: dict[str, Any], now: float, within: Iterable[str] = ()) -> bool:
    """Whether a memory's ``payload`` holds at ``now`` (in the namespaces ``within``, when given)."""
    end = payload.get("expires_at")
    current = payload.get("superseded_by") is None and (end is None or end > now)
    return current and not set(within) & set(payload.get("replaced_in", ()))


def replaced(payload: dict[str, Any], by: str, namespace: str, now: float) -> dict[str, Any]:
    """The changes to a memory that ``by``, said in ``namespace``, replaces.

    A memory held in every namespace replaced within one is no longer held there; any other is
    superseded.
    """
    if payload.get("namespace") == ANY_NAMESPACE and namespace != ANY_NAMESPACE:
        return {"replaced_in": sorted({*payload.get("replaced_in", ()), namespace})}
    return {"superseded_by": by, "superseded_at": now}
