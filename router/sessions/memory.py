"""Memories: durable facts the user stated, kept per scope and namespace.

What becomes a memory is decided by ``router.sessions.extraction``; which memories come back
with a turn by ``router.sessions.recall``. Each memory keeps its vector in its payload too, so
a route reads a scope's memories with their vectors in one scroll and ranks them in numpy.

Vectors of two models never mix, so each model has its own memories collection
(``memory_spec``). When the served model changes (a new generation), every memory is embedded
again with the new model, keeping its scope, namespace, session and time; a second pass just
before the switch catches memories stored or deleted while the first one ran.
"""

from __future__ import annotations

import asyncio
import builtins
import hashlib
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np

from router.embedding import Embedder, Vectors
from router.embedding.batching import pack, unpack
from router.storage.base import Collection, CollectionSpec, PointData, Record, Storage

_IDS = uuid.UUID("9a7b6c5d-4e3f-4a1b-8c2d-1e0f9a8b7c6d")
# Memories posted without a namespace hold in every namespace of their scope.
ANY_NAMESPACE = "*"
# A route reads at most this many memories of a scope (the newest when there are more).
SCAN_LIMIT = 256
# A new memory this similar to a stored one is the same memory.
DUPLICATE_SCORE = 0.95
REEMBED_BATCH = 256
_FIELDS = ("text", "namespace", "created_at", "session_id", "vector")


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
    """A memory as stored: what it says, where it holds, when and from which session it came."""

    id: str
    text: str
    namespace: str
    created_at: float
    session_id: str | None


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


def _stored(record: Record) -> StoredMemory:
    p = record.payload
    return StoredMemory(
        record.id, p["text"], p.get("namespace", ANY_NAMESPACE), p.get("created_at", 0.0), p.get("session_id")
    )


class MemoryStore:
    """Memories by scope and namespace, deduplicated exactly and by meaning.

    Args:
        collection: the memories collection of the embedding model in use.
    """

    def __init__(self, collection: Collection) -> None:
        self._collection = collection
        self._dimension = collection.spec.dense_size or 0

    @classmethod
    def open(cls, storage: Storage, *, model: str, dimension: int) -> MemoryStore:
        """Open the memories collection of ``model``."""
        return cls(storage.collection(memory_spec(model, dimension)))

    def add(
        self,
        scope: str,
        namespace: str,
        texts: Sequence[str],
        vectors: Vectors,
        *,
        session_id: str | None,
        created_at: Sequence[float] | None = None,
    ) -> int:
        """Store new memories; returns how many were new.

        ``created_at`` keeps the original times when memories are copied (a model change).
        """
        points: list[PointData] = []
        where = {"scope": scope, "namespace": namespace}
        for position, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            near = self._collection.search(dense=vector.tolist(), match=where, limit=1)
            if near and near[0].score >= DUPLICATE_SCORE:
                continue
            key = f"{scope}\x00{namespace}\x00{' '.join(text.lower().split())}"
            when = created_at[position] if created_at is not None else time.time()
            payload: dict[str, Any] = {**where, "text": text, "session_id": session_id, "created_at": when}
            payload["vector"] = pack(vector, "<f4")
            points.append(PointData(id=str(uuid.uuid5(_IDS, key)), payload=payload, dense=vector.tolist()))
        self._collection.upsert(points)
        return len(points)

    def rows(self, scope: str, namespaces: Iterable[str], *, limit: int = SCAN_LIMIT) -> MemoryRows:
        """The scope's memories that hold in ``namespaces`` (``*`` ones included), with their vectors."""
        where = {"scope": scope, "namespace": sorted({*namespaces, ANY_NAMESPACE})}
        records = list(islice(self._collection.scroll(where, fields=("text", "vector", "created_at")), limit * 4))
        if len(records) > limit:
            records = sorted(records, key=lambda r: r.payload.get("created_at", 0.0))[-limit:]
        # Memories stored before their vector was kept in the payload are listed, never recalled.
        kept = [r for r in records if "vector" in r.payload]
        vectors = [unpack(r.payload["vector"], "<f4", self._dimension) for r in kept]
        matrix = np.concatenate(vectors) if vectors else np.zeros((0, self._dimension), dtype=np.float32)
        return MemoryRows([r.payload["text"] for r in kept], matrix)

    def list(self, scope: str, *, namespace: str | None = None) -> list[StoredMemory]:
        """Every memory of a scope (of one namespace when given), oldest first."""
        where = {"scope": scope} | ({"namespace": namespace} if namespace is not None else {})
        records = self._collection.scroll(where, fields=[f for f in _FIELDS if f != "vector"])
        return sorted((_stored(r) for r in records), key=lambda m: (m.created_at, m.id))

    def namespaces(self, scope: str) -> set[str]:
        """The namespaces the scope's memories are stored in (``*`` for every namespace)."""
        return {
            r.payload.get("namespace", ANY_NAMESPACE)
            for r in self._collection.scroll({"scope": scope}, fields=["namespace"])
        }

    def delete(self, scope: str, memory_id: str) -> bool:
        """Delete one memory of the scope; False when the scope holds no memory of that id."""
        try:
            found = self._collection.retrieve([str(uuid.UUID(memory_id))])
        except ValueError:
            return False
        if not found or found[0].payload.get("scope") != scope:
            return False
        self._collection.delete([found[0].id])
        return True

    def delete_ids(self, ids: Sequence[str]) -> None:
        """Delete memories by id, whatever their scope (unknown ids are ignored)."""
        self._collection.delete(list(ids))

    def forget(self, scope: str) -> int:
        """Delete every memory of a scope; returns how many there were."""
        count = self._collection.count({"scope": scope})
        self._collection.delete_where({"scope": scope})
        return count

    def every(self) -> builtins.list[tuple[str, StoredMemory]]:
        """Every memory of every scope, with its scope (to copy them to another model)."""
        records = self._collection.scroll(None, fields=["scope", *[f for f in _FIELDS if f != "vector"]])
        return [(r.payload["scope"], _stored(r)) for r in records]


def memory_context(memories: Sequence[Memory]) -> str:
    """Ready-to-use context text for the model (empty when there is nothing to say)."""
    if not memories:
        return ""
    lines = "\n".join(f"- {m.text}" for m in memories)
    return f"Relevant things the user said before, most relevant first:\n{lines}"


async def reembed_memories(storage: Storage, *, source: tuple[str, int], target: Embedder) -> int:
    """Make the target model's memories those of the source model; returns how many were embedded.

    Memories already in the target (same scope, namespace and text) are not embedded again, and
    target memories no longer in the source are deleted, so calling it twice costs the changes only.

    Args:
        storage: where both collections live.
        source: the previous model's name and dimension.
        target: the new model.
    """
    model, dimension = source
    if model == target.model_name or not await asyncio.to_thread(storage.exists, memory_spec(model, dimension).name):
        return 0
    old = await asyncio.to_thread(MemoryStore.open, storage, model=model, dimension=dimension)
    new = await asyncio.to_thread(MemoryStore.open, storage, model=target.model_name, dimension=target.dimension)
    wanted = await asyncio.to_thread(old.every)
    present = {m.id for _, m in await asyncio.to_thread(new.every)}
    gone = present - {m.id for _, m in wanted}
    if gone:
        await asyncio.to_thread(new.delete_ids, sorted(gone))
    groups: dict[tuple[str, str, str | None], list[StoredMemory]] = defaultdict(list)
    for scope, memory in wanted:
        if memory.id not in present:
            groups[(scope, memory.namespace, memory.session_id)].append(memory)
    embedded = 0
    for (scope, namespace, session_id), memories in groups.items():
        for start in range(0, len(memories), REEMBED_BATCH):
            part = memories[start : start + REEMBED_BATCH]
            texts, created = [m.text for m in part], [m.created_at for m in part]
            vectors = await target.embed(texts, kind="memory")
            await asyncio.to_thread(
                new.add, scope, namespace, texts, vectors, session_id=session_id, created_at=created
            )
            embedded += len(part)
    return embedded


def drop_memories(storage: Storage, *, model: str, dimension: int) -> None:
    """Remove a model's memories collection (after its memories moved to the new model)."""
    storage.drop(memory_spec(model, dimension).name)
