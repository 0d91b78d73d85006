"""``GET /v1/catalogs/{namespace}/misses``: how often the model called a function its turn had not been routed.

Calls are checked when their run is stored (``POST /v1/sessions/{id}/messages``) against what
the session's turns were routed; see ``router.sessions.routes``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from router.api.auth import AccessDep, CatalogsDep, TurnRouterDep, get_access
from router.api.errors import responses
from router.api.limits import body_router
from router.api.schemas import NAMESPACE


class OutcomeCounts(BaseModel):
    """Checked calls by outcome."""

    routed: int = Field(description="the function was routed or pinned for the call's turn")
    searched: int = Field(description="not routed, but a tool search of the session found it")
    missed: int = Field(description="neither: the model found it elsewhere (the full list, its own memory)")


class MissedFunction(BaseModel):
    """A function the model needed and was not given, with how often."""

    name: str
    misses: int


class MissedCall(BaseModel):
    """One missed call: the request of its turn, and what was routed instead."""

    function: str
    session_id: str
    request: str = Field(description="the user text of the call's turn")
    routed: list[str] = Field(description="the functions the turn was given (pinned ones first)")
    at: float = Field(description="when the run was stored (Unix seconds)")


class MissesOut(BaseModel):
    """A catalog's miss rate, the functions missed most, and the latest missed calls."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "namespace": "travel",
                    "miss_rate": 0.125,
                    "checked": 8,
                    "counts": {"routed": 6, "searched": 1, "missed": 1},
                    "most_missed": [{"name": "cancel_booking", "misses": 1}],
                    "latest": [
                        {
                            "function": "cancel_booking",
                            "session_id": "s-1",
                            "request": "Drop my hotel in Rome, I'm not going any more",
                            "routed": ["get_booking", "search_hotels", "book_hotel"],
                            "at": 1764900000.0,
                        }
                    ],
                }
            ]
        }
    )

    namespace: str
    miss_rate: float | None = Field(description="missed / checked; null before any call is checked")
    checked: int = Field(description="calls checked: routed + searched + missed (unchecked calls are left out)")
    counts: OutcomeCounts
    most_missed: list[MissedFunction] = Field(description="up to 10, most missed first")
    latest: list[MissedCall] = Field(description="the latest missed calls, newest first")


router = body_router("/v1/catalogs", ["catalogs"], Depends(get_access))


@router.get("/{namespace}/misses", responses=responses(401, 403, 404, 422, 503))
async def catalog_misses(
    access: AccessDep,
    catalogs: CatalogsDep,
    turns: TurnRouterDep,
    namespace: str = Path(pattern=NAMESPACE, description="the catalog's namespace"),
    limit: Annotated[int, Query(ge=0, le=100, description="latest missed calls to list")] = 20,
) -> MissesOut:
    """How often the model called a function its turn had not been routed, checked when runs are stored.

    Only turns routed (or searched) with a `session_id` can be checked.
    """
    access.check(namespace)
    await catalogs.record(namespace)
    found = await turns.misses(namespace, limit=limit)
    return MissesOut(
        namespace=namespace,
        miss_rate=found.rate,
        checked=sum(found.counts.values()),
        counts=OutcomeCounts(**found.counts),
        most_missed=[MissedFunction(name=name, misses=count) for name, count in found.most_missed],
        latest=[MissedCall.model_validate(payload) for payload in found.latest],
    )
