"""Session history kept in storage, so any replica and any restart sees the same conversation.

Each stored message is stamped with its source, as Agent Framework stamps messages:
``external`` (the caller's input and the agent's own output), ``history`` (loaded from a
history provider) and ``context_provider`` (added by a context provider). Messages that
came from history are already stored and are not stored twice.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from router.storage.base import Collection, CollectionSpec, PointData, Storage

Source = Literal["external", "history", "context_provider"]
SOURCES: tuple[Source, ...] = ("external", "history", "context_provider")
MESSAGES = CollectionSpec(
    name="messages", tenant_field="session_id", keyword_fields=("user_id", "namespace"), integer_fields=("seq",)
)
_IDS = uuid.UUID("3e0c9a1d-5b7f-4c2e-8a64-9d1f2b3c4e5f")
# Fields the store owns; a message's own fields of the same names are not kept.
_STAMP = ("session_id", "user_id", "namespace", "seq", "source", "stored_at")


def as_message(record: Mapping[str, Any]) -> dict[str, Any]:
    """A stored message without the store's own fields: ready to hand back to a model."""
    return {k: v for k, v in record.items() if k not in _STAMP}


def message_source(message: Mapping[str, Any]) -> Source:
    """The source a message is stamped with (``external`` unless it says otherwise)."""
    source = message.get("source", "external")
    return source if source in SOURCES else "external"


def _point(session_id: str, message: Mapping[str, Any]) -> str | None:
    """The point id of a message that carries its own ``id`` (None: it has none)."""
    key = message.get("id") or message.get("message_id")
    return str(uuid.uuid5(_IDS, f"{session_id}\x00{key}")) if key else None


class _Clock:
    """Increasing microseconds that also order what other processes write (their ``seq``)."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def take(self, count: int) -> list[int]:
        """``count`` increasing values, each above every value taken before (from any thread)."""
        with self._lock:
            start = max(self._last + 1, time.time_ns() // 1_000)
            self._last = start + count - 1
            return list(range(start, start + count))

    def tick(self) -> int:
        """One value above every value taken before."""
        return self.take(1)[0]


# The process's one clock: messages and route records (``router.sessions.routes``) never share a ``seq``.
CLOCK = _Clock()
# Two posts of one retried message in this process, through any store of it: one finds the other's write.
_WRITING = threading.Lock()


class HistoryStore:
    """Every session's messages, in order."""

    def __init__(self, collection: Collection) -> None:
        self._collection = collection

    @classmethod
    def open(cls, storage: Storage) -> HistoryStore:
        """Open the messages collection, creating it when missing."""
        return cls(storage.collection(MESSAGES))

    def append(
        self,
        session_id: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        user_id: str | None,
        namespace: str | None = None,
    ) -> list[dict[str, Any]]:
        """Store messages at the end of the session; returns those stored now, as stored.

        A message with an ``id`` (or ``message_id``) is stored once however often it is
        posted, so a client may retry safely: posted again as it was, it keeps its place in the
        session and is not returned. Posted with other content, it is the message edited: stored
        again at the end, as a new message is. ``namespace`` is stamped on each message: it
        decides which API keys may reach the session.
        """
        kept = [m for m in messages if message_source(m) != "history"]
        keys = [_point(session_id, m) for m in kept]
        written: dict[str, dict[str, Any]] = {}
        now = time.time()
        with _WRITING:
            stored = {r.id: r.payload for r in self._collection.retrieve([k for k in keys if k])}
            for message, key in zip(kept, keys, strict=True):
                body = as_message(message)
                if key in stored and as_message(stored[key]) == body:
                    continue  # a retry, or the same id twice in one post
                seq = CLOCK.tick()
                stamp = {"session_id": session_id, "seq": seq, "source": message_source(message), "stored_at": now}
                record = {**body, **stamp}
                if user_id is not None:
                    record["user_id"] = user_id
                if namespace is not None:
                    record["namespace"] = namespace
                point = key or str(uuid.uuid5(_IDS, f"{session_id}\x00#{seq}"))
                if key:
                    stored[key] = record
                written.pop(point, None)  # the same id again in one post, edited: the later one is the message
                written[point] = record
            self._collection.upsert([PointData(id=point, payload=record) for point, record in written.items()])
        return list(written.values())

    def messages(self, session_id: str, *, limit: int | None = None) -> list[dict[str, Any]]:
        """The session's messages, oldest first; only the last ``limit`` when given."""
        if limit is not None:
            if limit <= 0:
                return []
            records = self._collection.latest({"session_id": session_id}, order_by="seq", limit=limit)
            return [r.payload for r in reversed(records)]
        return [r.payload for r in self._collection.scroll({"session_id": session_id}, order_by="seq")]

    def count(self, session_id: str) -> int:
        """How many messages a session has."""
        return self._collection.count({"session_id": session_id})

    def outside(self, session_id: str, namespaces: Iterable[str]) -> int:
        """How many of the session's messages were stored without one of ``namespaces``."""
        total = self.count(session_id)
        if total == 0:
            return 0
        return total - self._collection.count({"session_id": session_id, "namespace": sorted(namespaces)})

    def delete(self, session_id: str) -> None:
        """Forget a session's history."""
        self._collection.delete_where({"session_id": session_id})
