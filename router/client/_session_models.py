"""Typed answers of the session and memory endpoints: stored runs, history, a user's memories."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from router.client._models import _dicts, _float, _int, _list, _object, _str


@dataclass(frozen=True)
class StoredMessages:
    """What ``add_messages`` stored."""

    session_id: str
    stored: int
    memories_added: int
    memories_updated: int = 0
    memories_expired: int = 0

    @classmethod
    def from_json(cls, body: Any) -> StoredMessages:
        """Read a ``POST /v1/sessions/{id}/messages`` answer."""
        data = _object(body, "stored")
        return cls(
            session_id=_str(data, "session_id"),
            stored=_int(data, "stored"),
            memories_added=_int(data, "memories_added"),
            memories_updated=_int(data, "memories_updated") if "memories_updated" in data else 0,
            memories_expired=_int(data, "memories_expired") if "memories_expired" in data else 0,
        )


def messages_from_json(body: Any) -> list[dict[str, Any]]:
    """Read a ``GET /v1/sessions/{id}/messages`` answer."""
    return list(_dicts(_object(body, "session").get("messages"), "messages"))


@dataclass(frozen=True)
class StoredMemory:
    """A memory kept for a user: what it says, the namespace it holds in (``*``: every one),
    when it was stored (Unix seconds) and the session it was said in."""

    id: str
    text: str
    namespace: str
    created_at: float
    session_id: str | None

    @classmethod
    def from_json(cls, body: Any) -> StoredMemory:
        """Read one ``memories`` item of ``GET /v1/users/{id}/memories``."""
        item = _object(body, "memory")
        session = item.get("session_id")
        if session is not None and not isinstance(session, str):
            raise TypeError(f"memory: session_id is {type(session).__name__}, not a string")
        return cls(
            id=_str(item, "id"),
            text=_str(item, "text"),
            namespace=_str(item, "namespace"),
            created_at=_float(item, "created_at"),
            session_id=session,
        )


def memories_from_json(body: Any) -> list[StoredMemory]:
    """Read a ``GET /v1/users/{id}/memories`` answer."""
    return [StoredMemory.from_json(m) for m in _list(_object(body, "memories").get("memories"), "memories")]


@dataclass(frozen=True)
class MemoriesDeleted:
    """What deleting a user's memories removed."""

    user_id: str
    deleted: int

    @classmethod
    def from_json(cls, body: Any) -> MemoriesDeleted:
        """Read a ``DELETE /v1/users/{id}/memories[/{memory_id}]`` answer."""
        data = _object(body, "deleted")
        return cls(user_id=_str(data, "user_id"), deleted=_int(data, "deleted"))
