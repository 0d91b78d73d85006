"""The memories store: durable facts the user stated, kept per scope and namespace.

What a memory record holds is in ``router.sessions.records``; what becomes a memory is decided
by ``router.sessions.extraction``; which memories come back with a turn by
``router.sessions.recall``. Each memory keeps its vector in its payload too, so a route reads a
scope's memories with their vectors in one scroll and ranks them in numpy.

Vectors of two models never mix, so each model has its own memories collection
(``records.memory_spec``); ``router.sessions.reembed`` moves memories to a new model. A
time-bound memory holds until its ``expires_at``; one a newer statement updates is kept,
superseded.
"""

from __future__ import annotations

import builtins
import threading
import time
import uuid
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from router.embedding import Vectors
from router.embedding.batching import unpack
from router.sessions.records import (
    ANY_NAMESPACE,
    MemoryChanges,
    MemoryRows,
    StoredMemory,
    from_record,
    holds,
    memory_spec,
    replaced,
    to_point,
)
from router.sessions.slots import contradicts, forgets
from router.storage.base import Collection, PointData, Record, Storage

_IDS = uuid.UUID("9a7b6c5d-4e3f-4a1b-8c2d-1e0f9a8b7c6d")
# A route reads at most this many memories of a scope: the newest, when it holds more.
SCAN_LIMIT = 256
# A new memory this similar to a stored one is the same memory.
DUPLICATE_SCORE = 0.95
REEMBED_BATCH = 256
_STRIPES = 64
_FIELDS = ("text", "namespace", "created_at", "session_id", "vector", "expires_at", "superseded_by", "replaced_in")
# What a route reads of each memory, and what deciding whether it still holds reads.
_ROW_FIELDS = ("text", "vector")
_WHEN_FIELDS = ("created_at", "expires_at", "superseded_by", "replaced_in")
_STATE_FIELDS = (
    "namespace", "session_id", "slot", "value", "expires_at", "superseded_by", "replaced_in", "expired", "text"
)  # fmt: skip


def _replaces(payload: dict[str, Any], slot: tuple[Any, Any], text: str) -> bool:
    """Whether a memory of ``text`` setting ``slot`` (slot, value) updates, or denies, the one with ``payload``."""
    if slot[0] is not None and payload.get("slot") == slot[0] and payload.get("value") != slot[1]:
        return True
    return contradicts(str(payload.get("text", "")), text)


class MemoryStore:
    """Memories by scope and namespace, deduplicated exactly and by meaning.

    Args:
        collection: the memories collection of the embedding model in use.
    """

    def __init__(self, collection: Collection) -> None:
        self._collection = collection
        self._dimension = collection.spec.dense_size or 0
        # A scope's writes read its memories, then write changes on what they read: two runs at once would
        # each write its own replaced_in, the later losing the other's. Striped by scope, not one per user.
        self._writing = [threading.Lock() for _ in range(_STRIPES)]

    def _lock(self, scope: str) -> threading.Lock:
        return self._writing[zlib.crc32(scope.encode()) % _STRIPES]

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
        expires_at: Sequence[float | None] | None = None,
    ) -> MemoryChanges:
        """Store new memories, replacing the ones they update; returns what changed.

        A new lasting memory that sets the same slot as a current one of the namespace with another
        value, or denies it ("I'm not allergic to peanuts any more"; ``router.sessions.slots``),
        supersedes it: the older one stays listed but never comes back in routes. One held in every
        namespace (``*``) is only no longer held in this namespace (``records.replaced``); a memory
        said without a namespace supersedes those of every namespace. ``expires_at``
        ends time-bound memories, which replace nothing. A statement posted again in the session it
        was said in is a retry and changes nothing (``_retried``), unless that session has since
        said, in another post, what replaced it ("I live in Porto" again after "We moved to
        Lisbon"); said again in another session ("we moved back to Porto"), it is current again.
        """
        with self._lock(scope):
            now = time.time()
            where, here = _reach(scope, namespace), [namespace]
            state = list(self._collection.scroll(where, fields=_STATE_FIELDS))
            # Another namespace's memories, and those of every namespace, are not expired nor counted here.
            own = [r for r in state if r.payload.get("namespace") == namespace]
            # Ended, not only replaced, and not marked before.
            expired = [r for r in own if 0 < (r.payload.get("expires_at") or 0) <= now and not r.payload.get("expired")]
            changed: dict[str, dict[str, Any]] = {r.id: {"expired": True} for r in expired}
            stored = {r.id: r.payload for r in state}
            ids = [_memory_id(scope, namespace, text) for text in texts]
            posted = set(ids)
            current = [r for r in state if holds(r.payload, now, here)]
            points: list[PointData] = []
            updated: set[str] = set()
            for position, (memory_id, text, vector) in enumerate(zip(ids, texts, vectors, strict=True)):
                end = expires_at[position] if expires_at is not None else None
                memory = StoredMemory(memory_id, text, namespace, now, session_id, end)
                if memory.id not in changed and _retried(stored, memory.id, session_id, posted, now):
                    continue
                point = to_point(scope, memory, vector)
                slot = (point.payload.get("slot"), point.payload.get("value"))
                hits = self._collection.search(dense=vector.tolist(), match=where, limit=3, fields=_STATE_FIELDS)
                # "My hotel budget is 120 euros" is near "... 150 euros" in meaning, but updates it.
                if any(
                    h.score >= DUPLICATE_SCORE
                    and h.payload.get("namespace") in (namespace, ANY_NAMESPACE)  # held wherever this one would be
                    and holds({**h.payload, **changed.get(h.id, {})}, now, here)  # as this run left it
                    and not (namespace == ANY_NAMESPACE and h.payload.get("replaced_in"))
                    and not _replaces(h.payload, slot, text)
                    for h in hits
                ):
                    continue
                for old in current if end is None else []:
                    if old.id != memory.id and _replaces(old.payload, slot, text):
                        changed[old.id] = replaced(old.payload, memory.id, namespace, now)
                        updated.add(old.id)
                changed.pop(memory.id, None)  # said again: what this run did to it before is undone
                current.append(Record(point.id, dict(point.payload)))
                points.append(point)
            # Said twice in this run ("I live in Porto.", "i live in porto."), a memory is written once, as said
            # last; one that a later one of this run replaced is written replaced.
            latest = {p.id: p for p in points}.values()
            points = [PointData(p.id, {**p.payload, **changed.pop(p.id, {})}, dense=p.dense) for p in latest]
            self.restate(changed)
            if points:
                self._collection.upsert(points)
            return MemoryChanges(added=len(points), updated=len(updated), expired=len(expired))

    def copy(self, scope: str, memories: Sequence[StoredMemory], vectors: Vectors) -> None:
        """Store memories of another model as they were (times, expiry and what replaced them)."""
        self._collection.upsert([to_point(scope, m, v) for m, v in zip(memories, vectors, strict=True)])

    def restate(self, changes: dict[str, dict[str, Any]]) -> None:
        """Change payload fields of memories by id (their vector stays); unknown ids are ignored."""
        # Points are written whole: each keeps its payload and vector, with the changes on top.
        if not changes:
            return
        points = []
        for record in self._collection.retrieve(list(changes)):
            vector = unpack(record.payload["vector"], "<f4", self._dimension)[0].tolist()
            points.append(PointData(id=record.id, payload=record.payload | changes[record.id], dense=vector))
        self._collection.upsert(points)

    def rows(self, scope: str, namespaces: Iterable[str], *, limit: int = SCAN_LIMIT) -> MemoryRows:
        """The scope's memories that hold in ``namespaces`` (``*`` ones included), with their vectors."""
        namespaces = sorted(set(namespaces))
        where = {"scope": scope, "namespace": sorted({*namespaces, ANY_NAMESPACE})}
        now = time.time()
        # Every current memory's time, then the newest ones' texts and vectors: scrolled in id order,
        # a bound on the scroll left a user's newest memories out of every route once they held more.
        times = self._collection.scroll(where, fields=_WHEN_FIELDS)
        current = [r for r in times if holds(r.payload, now, namespaces)]
        newest = sorted(current, key=lambda r: r.payload.get("created_at", 0.0))[-limit:]
        records = self._collection.retrieve([r.id for r in newest], fields=_ROW_FIELDS) if newest else []
        # Memories stored before their vector was kept in the payload are listed, never recalled; one said
        # in the namespace and again for every namespace comes back once.
        said: dict[str, Record] = {_worded(r.payload["text"]): r for r in records}
        kept = [r for r in said.values() if "vector" in r.payload]
        vectors = [unpack(r.payload["vector"], "<f4", self._dimension) for r in kept]
        matrix = np.concatenate(vectors) if vectors else np.zeros((0, self._dimension), dtype=np.float32)
        return MemoryRows([r.payload["text"] for r in kept], matrix)

    def list(
        self, scope: str, *, namespaces: Iterable[str] | None = None, everything: bool = False
    ) -> list[StoredMemory]:
        """The current memories of a scope (stored in ``namespaces`` when given), oldest first.

        With ``everything``, superseded and expired memories too.
        """
        records = self._collection.scroll(_where(scope, namespaces), fields=[f for f in _FIELDS if f != "vector"])
        now = time.time()
        found = (m for m in map(from_record, records) if everything or m.current(now))
        return sorted(found, key=lambda m: (m.created_at, m.id))

    def delete(self, scope: str, memory_id: str, *, namespaces: Iterable[str] | None = None) -> bool:
        """Delete one memory of the scope (stored in ``namespaces`` when given); False when it holds none of that id."""
        try:
            found = self._collection.retrieve([str(uuid.UUID(memory_id))])
        except ValueError:
            return False
        if not found or found[0].payload.get("scope") != scope:
            return False
        if namespaces is not None and found[0].payload.get("namespace") not in set(namespaces):
            return False
        self._collection.delete([found[0].id])
        return True

    def drop(self, scope: str, namespace: str, requests: Sequence[str]) -> int:
        """Delete the scope's memories that ``requests`` name ("my address", "that I live in Porto"); returns how many.

        A request reaches the memories that hold in ``namespace``, superseded and expired ones too
        (``router.sessions.slots.forgets``); one said without a namespace reaches every namespace.
        A memory held in every namespace (``*``) is not a namespace's to delete: it is no longer
        held in that namespace (``replaced_in``), and stays in the others.
        """
        with self._lock(scope):
            where = _reach(scope, namespace)
            records = (
                self._collection.scroll(where, fields=("text", "slot", "namespace", "replaced_in")) if requests else []
            )
            named = [
                r
                for r in records
                if namespace not in r.payload.get("replaced_in", ())
                and any(forgets(q, r.payload["text"], r.payload.get("slot")) for q in requests)
            ]
            shared = namespace != ANY_NAMESPACE
            hidden = {
                r.id: replaced(r.payload, "", namespace, 0)
                for r in named
                if shared and r.payload["namespace"] != namespace
            }
            self.restate(hidden)
            if gone := [r.id for r in named if r.id not in hidden]:
                self.delete_ids(gone)
            return len(named)

    def delete_ids(self, ids: Sequence[str]) -> None:
        """Delete memories by id, whatever their scope (unknown ids are ignored)."""
        self._collection.delete(list(ids))

    def forget(self, scope: str, *, namespaces: Iterable[str] | None = None) -> int:
        """Delete every memory of a scope (stored in ``namespaces`` when given); returns how many there were."""
        where = _where(scope, namespaces)
        count = self._collection.count(where)
        self._collection.delete_where(where)
        return count

    def every(self) -> builtins.list[tuple[str, StoredMemory]]:
        """Every memory of every scope, with its scope (to copy them to another model)."""
        records = self._collection.scroll(None, fields=["scope", *[f for f in _FIELDS if f != "vector"]])
        return [(r.payload["scope"], from_record(r)) for r in records]


def _worded(text: str) -> str:
    """A statement as worded, whatever its case and spacing: "I live in Porto." and "i live in  porto." are one."""
    return " ".join(text.lower().split())


def _memory_id(scope: str, namespace: str, text: str) -> str:
    return str(uuid.uuid5(_IDS, f"{scope}\x00{namespace}\x00{_worded(text)}"))


def _retried(
    stored: dict[str, dict[str, Any]], memory_id: str, session: str | None, posted: set[str], now: float
) -> bool:
    """Whether a statement said again is its post retried rather than said anew.

    It is when the session that said it says it again while it still holds, or while what
    replaced it came from another session or is said in this post too (the post retried). Said
    after this session replaced it in another post, after it ended, or after what replaced it
    was forgotten, it is said anew.
    """
    payload = stored.get(memory_id)
    if payload is None or payload.get("session_id") != session:
        return False
    if holds(payload, now):
        return True
    replacer = payload.get("superseded_by")
    by = stored.get(replacer or "")
    if by is None:  # ended, or what replaced it is forgotten
        return False
    return by.get("session_id") != session or replacer in posted


def _reach(scope: str, namespace: str) -> dict[str, Any]:
    """The memories that hold where a run in ``namespace`` is said (with ``*``: every namespace)."""
    return {"scope": scope} if namespace == ANY_NAMESPACE else _where(scope, {namespace, ANY_NAMESPACE})


def _where(scope: str, namespaces: Iterable[str] | None) -> dict[str, Any]:
    return {"scope": scope} if namespaces is None else {"scope": scope, "namespace": sorted(namespaces)}
