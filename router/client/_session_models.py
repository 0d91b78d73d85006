"""Typed answers of the session and memory endpoints: stored runs, history, a user's memories."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from router.client._models import _dicts, _float, _int, _list, _object, _optional_float, _str


@dataclass(frozen=True)
class StoredMessages:
    """What ``add_messages`` stored."""

    session_id: str
    stored: int
    memories_added: int
    memories_updated: int = 0
    memories_expired: int = 0
    memories_forgotten: int = 0

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
            memories_forgotten=_int(data, "memories_forgotten") if "memories_forgotten" in data else 0,
        )


def messages_from_json(body: Any) -> list[dict[str, Any]]:
    """Read a ``GET /v1/sessions/{id}/messages`` answer."""
    return list(_dicts(_object(body, "session").get("messages"), "messages"))


@dataclass(frozen=True)
class StoredMemory:
    """A memory kept for a user: what it says, the namespace it holds in (``*``: every one),
    when it was stored (Unix seconds) and the session it was said in; when a time-bound one
    stops holding, the memory that replaced it, and its ``status`` (``current``, ``superseded``
    or ``expired``). ``replaced_in``: for a memory held in every namespace, those where it no
    longer holds (a newer statement replaced it there, or the user had it forgotten)."""

    id: str
    text: str
    namespace: str
    created_at: float
    session_id: str | None
    expires_at: float | None = None
    superseded_by: str | None = None
    status: str = "current"
    replaced_in: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, body: Any) -> StoredMemory:
        """Read one ``memories`` item of ``GET /v1/users/{id}/memories``."""
        item = _object(body, "memory")
        for key in ("session_id", "superseded_by"):
            if item.get(key) is not None and not isinstance(item[key], str):
                raise TypeError(f"memory: {key} is {type(item[key]).__name__}, not a string")
        return cls(
            id=_str(item, "id"),
            text=_str(item, "text"),
            namespace=_str(item, "namespace"),
            created_at=_float(item, "created_at"),
            session_id=item.get("session_id"),
            expires_at=_optional_float(item, "expires_at"),
            superseded_by=item.get("superseded_by"),
            status=_str(item, "status", "current"),
            replaced_in=tuple(str(n) for n in _list(item.get("replaced_in", []), "memory: replaced_in")),
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


@dataclass(frozen=True)
class SessionDeleted:
    """What deleting a session removed: its messages (and the memories scoped to it)."""

    session_id: str
    deleted: int

    @classmethod
    def from_json(cls, body: Any) -> SessionDeleted:
        """Read a ``DELETE /v1/sessions/{id}`` answer."""
        data = _object(body, "deleted")
        return cls(session_id=_str(data, "session_id"), deleted=_int(data, "deleted"))
