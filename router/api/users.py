"""``/v1/sessions`` and ``/v1/users``: what agents' runs produced, and what the router remembers of a user.

A session keeps its runs' messages. A user's memories are the ones stored with their ``user_id``
(memories of a session without a user belong to that session and go with it), to read and to
forget. API keys reach them as they reach sessions: a key limited to namespaces may read or
delete a user's memories only when every one of them was stored in one of its namespaces
(memories stored without a namespace hold in every namespace, so only a key for every
namespace reaches them).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Literal

from fastapi import Depends, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from router.api.auth import AccessDep, TurnRouterDep, check_session, get_access
from router.api.errors import responses
from router.api.keys import Access
from router.api.limits import body_router
from router.api.messages import Message
from router.api.schemas import IDENTIFIER, NAMESPACE
from router.common.errors import NotFound
from router.sessions.records import ANY_NAMESPACE, StoredMemory, user_scope

router = body_router("/v1/users", ["memories"], Depends(get_access))
sessions_router = body_router("/v1/sessions", ["sessions"], Depends(get_access))
# A namespace, or "*": the memories stored without one, as the list shows them.
STORED_IN = rf"^(?:\*|{NAMESPACE[1:-1]})$"
UserPath = Path(pattern=IDENTIFIER, description="the user id memories were stored with")
SessionPath = Path(pattern=IDENTIFIER, description="the agent's session id")


class SessionMessagesIn(BaseModel):
    """What an agent's run produced, to store in the session."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "namespace": "travel",
                    "user_id": "u-42",
                    "messages": [
                        {"role": "user", "content": "I prefer aisle seats. Find flights to Rome on Friday."},
                        {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": "search_flights", "arguments": "{}"},
                                }
                            ],
                        },
                        {"role": "tool", "tool_call_id": "call_1", "content": "3 flights found"},
                    ],
                }
            ]
        },
    )

    messages: list[Message] = Field(
        min_length=1,
        description="messages with an optional `source`: external (default), history (not stored again), "
        "context_provider",
    )
    user_id: str | None = Field(None, pattern=IDENTIFIER, description="scopes memories to the user")
    namespace: str | None = Field(
        None,
        pattern=NAMESPACE,
        description="the catalog the session routes in: memories are kept for it (without one, for every "
        "namespace), and messages are stamped with it; required with an API key limited to namespaces",
    )


class SessionMessagesOut(BaseModel):
    """A session's history."""

    session_id: str
    messages: list[dict[str, Any]]


class StoredOut(BaseModel):
    """What was stored."""

    session_id: str
    stored: int
    memories_added: int = Field(description="new memories kept from what the user stated")
    memories_updated: int = Field(0, description="stored memories the new ones replaced (listed as superseded)")
    memories_expired: int = Field(0, description="time-bound memories of the scope whose time has ended")
    memories_forgotten: int = Field(0, description="memories deleted because the user asked them to be forgotten")


class DeletedOut(BaseModel):
    """What deleting a session removed."""

    session_id: str
    deleted: int = Field(description="messages deleted")


@sessions_router.post("/{session_id}/messages", responses=responses(400, 401, 403, 404, 413, 422, 503))
async def post_messages(
    body: SessionMessagesIn, access: AccessDep, turns: TurnRouterDep, session_id: str = SessionPath
) -> StoredOut:
    """Store a run's messages (user input, assistant output, tool calls and results)."""
    access.check(body.namespace)
    await check_session(access, turns, session_id)
    stored, changes = await turns.record(
        session_id, [m.as_dict() for m in body.messages], user_id=body.user_id, namespace=body.namespace
    )
    return StoredOut(
        session_id=session_id,
        stored=len(stored),
        memories_added=changes.added,
        memories_updated=changes.updated,
        memories_expired=changes.expired,
        memories_forgotten=changes.forgotten,
    )


@sessions_router.get("/{session_id}/messages", responses=responses(401, 403, 422, 503))
async def get_messages(
    access: AccessDep,
    turns: TurnRouterDep,
    session_id: str = SessionPath,
    limit: int | None = Query(None, ge=1, le=10_000, description="only the last `limit` messages"),
) -> SessionMessagesOut:
    """The session's history as stored (with `source`, `namespace`, `seq`, `stored_at`), oldest first."""
    await check_session(access, turns, session_id)
    return SessionMessagesOut(session_id=session_id, messages=await turns.session(session_id, limit=limit))


@sessions_router.delete("/{session_id}", responses=responses(401, 403, 422, 503))
async def delete_session(access: AccessDep, turns: TurnRouterDep, session_id: str = SessionPath) -> DeletedOut:
    """Forget a session: its history and the memories scoped to it (user memories stay)."""
    await check_session(access, turns, session_id)
    return DeletedOut(session_id=session_id, deleted=await turns.forget(session_id, namespaces=access.namespaces))


class MemoryItem(BaseModel):
    """One stored memory."""

    id: str
    text: str
    namespace: str = Field(description=f"the catalog it holds in; {ANY_NAMESPACE!r} for every namespace")
    created_at: float = Field(description="when it was stored (Unix seconds)")
    session_id: str | None = Field(description="the session it was said in")
    expires_at: float | None = Field(None, description="when a time-bound memory stops holding (Unix seconds)")
    superseded_by: str | None = Field(None, description="the id of the newer memory that replaced it")
    replaced_in: list[str] = Field(
        default_factory=list,
        description="for a memory held in every namespace: the namespaces where a newer statement replaced it, "
        "or the user had it forgotten (it no longer comes back there)",
    )
    status: Literal["current", "superseded", "expired"] = Field(
        "current", description="only current memories come back in routes"
    )


class UserMemoriesOut(BaseModel):
    """A user's memories, oldest first."""

    user_id: str
    memories: list[MemoryItem]


class MemoriesDeletedOut(BaseModel):
    """How many memories a deletion removed."""

    user_id: str
    deleted: int


def reach(access: Access, namespace: str | None = None) -> frozenset[str] | None:
    """The namespaces whose memories a request reaches: ``namespace``, else the key's (None: every one).

    A key limited to namespaces reaches its own namespaces' memories of a user, whatever other
    tenants keep of the same user id; memories stored for every namespace (``*``) are a key for
    every namespace's to list and delete.
    """
    if namespace is not None:
        access.check(namespace)
        return frozenset({namespace})
    return access.namespaces


@router.get("/{user_id}/memories", responses=responses(401, 403, 422, 503))
async def list_memories(
    access: AccessDep,
    turns: TurnRouterDep,
    user_id: str = UserPath,
    namespace: str | None = Query(
        None, pattern=STORED_IN, description="only the memories stored in this namespace (`*`: stored without one)"
    ),
    include: Literal["superseded"] | None = Query(
        None, description="`superseded`: also the memories that were replaced or have expired"
    ),
) -> UserMemoriesOut:
    """The user's current memories: text, namespace, when and from which session, oldest first."""
    store = await turns.user_memories()
    within = reach(access, namespace)
    found = await asyncio.to_thread(store.list, user_scope(user_id), namespaces=within, everything=bool(include))
    now = time.time()
    items = [
        MemoryItem.model_validate(m, from_attributes=True).model_copy(update={"status": _status(m, now)}) for m in found
    ]
    return UserMemoriesOut(user_id=user_id, memories=items)


def _status(memory: StoredMemory, now: float) -> Literal["current", "superseded", "expired"]:
    if memory.superseded_by is not None:
        return "superseded"
    return "current" if memory.current(now) else "expired"


@router.delete("/{user_id}/memories/{memory_id}", responses=responses(401, 403, 404, 422, 503))
async def delete_memory(
    access: AccessDep,
    turns: TurnRouterDep,
    user_id: str = UserPath,
    memory_id: str = Path(pattern=IDENTIFIER, description="a memory's id, from the list"),
) -> MemoriesDeletedOut:
    """Forget one memory of the user (404 when the user has no memory of that id the key may reach)."""
    store, *copies = await turns.memory_stores()
    if not await asyncio.to_thread(store.delete, user_scope(user_id), memory_id, namespaces=reach(access)):
        raise NotFound(f"memory_id: user {user_id!r} has no memory {memory_id!r}")
    for copy in copies:  # the multilingual space's
        await asyncio.to_thread(copy.delete, user_scope(user_id), memory_id)
    return MemoriesDeletedOut(user_id=user_id, deleted=1)


@router.delete("/{user_id}/memories", responses=responses(401, 403, 422, 503))
async def delete_memories(
    access: AccessDep,
    turns: TurnRouterDep,
    user_id: str = UserPath,
    namespace: str | None = Query(
        None, pattern=STORED_IN, description="only the memories stored in this namespace (`*`: stored without one)"
    ),
) -> MemoriesDeletedOut:
    """Forget the memories of the user the key reaches (all with a key for every namespace), or of one namespace."""
    store, *copies = await turns.memory_stores()
    within = reach(access, namespace)
    deleted = await asyncio.to_thread(store.forget, user_scope(user_id), namespaces=within)
    for copy in copies:  # the multilingual space's
        await asyncio.to_thread(copy.forget, user_scope(user_id), namespaces=within)
    return MemoriesDeletedOut(user_id=user_id, deleted=deleted)
