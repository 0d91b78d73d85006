"""``/v1/sessions/{session_id}/messages``: what agents' runs produced, kept per session."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Query

from router.api.auth import AccessDep, check_session, get_access
from router.api.deps import TurnRouterDep
from router.api.errors import responses
from router.api.limits import check_body
from router.api.schemas import IDENTIFIER, DeletedOut, SessionMessagesIn, SessionMessagesOut, StoredOut

router = APIRouter(prefix="/v1/sessions", tags=["sessions"], dependencies=[Depends(get_access), Depends(check_body)])
SessionPath = Path(pattern=IDENTIFIER, description="the agent's session id")


@router.post("/{session_id}/messages", responses=responses(400, 401, 403, 404, 413, 422, 503))
async def post_messages(
    body: SessionMessagesIn, access: AccessDep, turns: TurnRouterDep, session_id: str = SessionPath
) -> StoredOut:
    """Store a run's messages (user input, assistant output, tool calls and results)."""
    access.check(body.namespace)
    await check_session(access, turns, session_id)
    stored, added = await turns.record(
        session_id, [m.as_dict() for m in body.messages], user_id=body.user_id, namespace=body.namespace
    )
    return StoredOut(session_id=session_id, stored=len(stored), memories_added=added)


@router.get("/{session_id}/messages", responses=responses(401, 403, 422, 503))
async def get_messages(
    access: AccessDep,
    turns: TurnRouterDep,
    session_id: str = SessionPath,
    limit: int | None = Query(None, ge=1, le=10_000, description="only the last `limit` messages"),
) -> SessionMessagesOut:
    """The session's history as stored (with `source`, `namespace`, `seq`, `stored_at`), oldest first."""
    await check_session(access, turns, session_id)
    return SessionMessagesOut(session_id=session_id, messages=await turns.session(session_id, limit=limit))


@router.delete("/{session_id}", responses=responses(401, 403, 422, 503))
async def delete_session(access: AccessDep, turns: TurnRouterDep, session_id: str = SessionPath) -> DeletedOut:
    """Forget a session: its history and the memories scoped to it (user memories stay)."""
    await check_session(access, turns, session_id)
    return DeletedOut(session_id=session_id, deleted=await turns.forget(session_id))
