"""What each session's turns were routed, and how each function the model then called was found.

A *route record* is kept for every turn routed with a ``session_id`` (``POST /v1/route``) and
every tool search made with one: the functions given (and the pinned ones), the request, and a
``seq`` from the same microsecond clock as the session's messages. When a run is stored, each
call in it is checked against the session's records:

- ``routed``: the function was routed or pinned for the call's turn;
- ``searched``: it was not, but a tool search of the session after that route found it;
- ``missed``: neither (the model found it in the full list, or by other means);
- ``unchecked``: the session has no route before the call. A turn routed without a
  ``session_id`` leaves no record, so calls after it cannot be checked.

The call's turn is the latest route before it whose request is the call's request (the user
text of its turn), else the latest route before it. Checked outcomes are kept one point per
call, so a catalog's miss rate and most-missed functions survive restarts and are the same on
every replica; a missed call keeps its request and what was routed instead.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from router.sessions.history import CLOCK
from router.storage.base import Collection, CollectionSpec, PointData, Storage

Kind = Literal["route", "search"]
Outcome = Literal["routed", "searched", "missed", "unchecked"]
CHECKED: tuple[Outcome, ...] = ("routed", "searched", "missed")
ROUTES = CollectionSpec(
    name="routes", tenant_field="session_id", keyword_fields=("namespace", "kind"), integer_fields=("seq",)
)
CALLS = CollectionSpec(
    name="calls",
    tenant_field="namespace",
    keyword_fields=("outcome", "function", "session_id"),
    integer_fields=("seq",),
)
# Route records read to check a run: its turns are the session's last few.
RECENT_ROUTES = 64
MOST_MISSED = 10
_IDS = uuid.UUID("9b2f4c6e-1a3d-4e5f-8b7a-0c2d4e6f8a1b")


@dataclass(frozen=True)
class RouteRecord:
    """What one turn of a session was given: by a route, or found by a tool search."""

    session_id: str
    namespace: str
    kind: Kind
    request: str
    functions: tuple[str, ...]
    pinned: tuple[str, ...] = ()
    # Taken when the turn is answered, though the record may be written a moment later.
    seq: int = field(default_factory=CLOCK.tick)


@dataclass(frozen=True)
class Call:
    """A call of a stored run: its message's ``seq`` and point key, the function and its turn's request."""

    seq: int
    key: str
    function: str
    request: str


@dataclass(frozen=True)
class Checked:
    """A call with its outcome, and the route of its turn (None when unchecked)."""

    call: Call
    outcome: Outcome
    route: RouteRecord | None


@dataclass(frozen=True)
class Misses:
    """A catalog's checked calls: counts per outcome, the functions missed most, the latest misses."""

    counts: dict[str, int]
    most_missed: list[tuple[str, int]]
    latest: list[dict[str, Any]]

    @property
    def rate(self) -> float | None:
        """Missed calls over checked ones (None before any call is checked)."""
        checked = sum(self.counts.values())
        return self.counts["missed"] / checked if checked else None


def check(calls: Sequence[Call], records: Sequence[RouteRecord]) -> list[Checked]:
    """Each call's outcome against the session's route records."""
    ordered = sorted(records, key=lambda r: r.seq)
    found: list[Checked] = []
    for call in calls:
        routes = [r for r in ordered if r.kind == "route" and r.seq < call.seq]
        if not routes:
            found.append(Checked(call, "unchecked", None))
            continue
        base = ([r for r in routes if r.request == call.request] or routes)[-1]
        outcome: Outcome = "missed"
        if call.function in base.functions or call.function in base.pinned:
            outcome = "routed"
        elif any(r.kind == "search" and base.seq < r.seq < call.seq and call.function in r.functions for r in ordered):
            outcome = "searched"
        found.append(Checked(call, outcome, base))
    return found


class RouteLog:
    """Route records per session and the checked calls per catalog."""

    def __init__(self, routes: Collection, calls: Collection) -> None:
        self._routes = routes
        self._calls = calls

    @classmethod
    def open(cls, storage: Storage) -> RouteLog:
        """Open both collections, creating them when missing."""
        return cls(storage.collection(ROUTES), storage.collection(CALLS))

    def add(self, record: RouteRecord) -> None:
        """Keep one route record."""
        payload = {**record.__dict__, "functions": list(record.functions), "pinned": list(record.pinned)}
        point = uuid.uuid5(_IDS, f"{record.session_id}\x00{record.namespace}\x00{record.seq}")
        self._routes.upsert([PointData(id=str(point), payload=payload)])

    def recent(self, session_id: str, namespace: str) -> list[RouteRecord]:
        """The session's latest route records in ``namespace``, oldest first."""
        found = self._routes.latest(
            {"session_id": session_id, "namespace": namespace}, order_by="seq", limit=RECENT_ROUTES
        )
        return [_record(r.payload) for r in reversed(found)]

    def keep(self, session_id: str, namespace: str, checked: Sequence[Checked]) -> None:
        """Keep checked calls (a call stored again replaces itself); missed ones with their request."""
        points = []
        now = time.time()
        for item in checked:
            if item.outcome == "unchecked" or item.route is None:
                continue
            call = item.call
            payload: dict[str, Any] = {"namespace": namespace, "session_id": session_id, "function": call.function}
            payload.update(outcome=item.outcome, seq=call.seq, at=now)
            if item.outcome == "missed":
                routed = list(dict.fromkeys([*item.route.pinned, *item.route.functions]))
                payload.update(request=call.request, routed=routed)
            point = uuid.uuid5(_IDS, f"{session_id}\x00{call.key}\x00{call.function}")
            points.append(PointData(id=str(point), payload=payload))
        self._calls.upsert(points)

    def misses(self, namespace: str, *, limit: int) -> Misses:
        """The catalog's counts per checked outcome, most-missed functions and ``limit`` latest misses."""
        counts: dict[str, int] = {o: self._calls.count({"namespace": namespace, "outcome": o}) for o in CHECKED}
        missed = {"namespace": namespace, "outcome": "missed"}
        names = Counter(r.payload["function"] for r in self._calls.scroll(missed, fields=["function"]))
        latest = [r.payload for r in self._calls.latest(missed, order_by="seq", limit=limit)] if limit else []
        return Misses(counts, names.most_common(MOST_MISSED), latest)

    def forget(self, session_id: str, *, namespaces: Iterable[str] | None = None) -> None:
        """Delete a session's route records and checked calls (they hold its requests), of ``namespaces`` when given."""
        where: dict[str, Any] = {"session_id": session_id}
        if namespaces is not None:
            where["namespace"] = sorted(namespaces)
        self._routes.delete_where(where)
        self._calls.delete_where(where)


def _record(payload: dict[str, Any]) -> RouteRecord:
    return RouteRecord(
        session_id=payload["session_id"],
        namespace=payload["namespace"],
        kind=payload["kind"],
        request=payload.get("request", ""),
        functions=tuple(payload.get("functions", ())),
        pinned=tuple(payload.get("pinned", ())),
        seq=int(payload["seq"]),
    )
