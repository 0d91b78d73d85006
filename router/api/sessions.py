"""``/v1/sessions/{session_id}/messages``: what agents' runs produced, kept per session."""

from __future__ import annotations

from fastapi import APIRouter, Path

from router.api.deps import TurnRouterDep
from router.api.errors import responses
from router.schemas import SessionMessagesIn, SessionMessagesOut, StoredOut

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])
SessionPath = Path(min_length=1, max_length=256, description="the agent's session id")


@router.post("/{session_id}/messages", responses=responses(404, 422, 503))
async def post_messages(body: SessionMessagesIn, turns: TurnRouterDep, session_id: str = SessionPath) -> StoredOut:
    """Store a run's messages (user input, assistant output, tool calls and results)."""
    stored, added = await turns.record(
        session_id, [m.model_dump() for m in body.messages], user_id=body.user_id, namespace=body.namespace
    )
    return StoredOut(session_id=session_id, stored=len(stored), memories_added=added)


@router.get("/{session_id}/messages", responses=responses(503))
async def get_messages(turns: TurnRouterDep, session_id: str = SessionPath) -> SessionMessagesOut:
    """The session's history, oldest first (empty for an unknown session)."""
    return SessionMessagesOut(session_id=session_id, messages=await turns.session(session_id))
