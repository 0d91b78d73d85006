"""Typed answer of the misses endpoint: how often the model called a function its turn was not given."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from router.client._models import _float, _int, _list, _object, _optional_float, _str


@dataclass(frozen=True)
class OutcomeCounts:
    """Checked calls by outcome.

    Attributes:
        routed: the function was routed or pinned for the call's turn.
        searched: not routed, but a tool search of the session found it.
        missed: neither: the model found it elsewhere (the full list, its own memory).
    """

    routed: int
    searched: int
    missed: int

    @classmethod
    def from_json(cls, body: Any) -> OutcomeCounts:
        """Read a ``counts`` object."""
        data = _object(body, "counts")
        return cls(_int(data, "routed"), _int(data, "searched"), _int(data, "missed"))


@dataclass(frozen=True)
class MissedFunction:
    """A function the model needed and was not given, with how often."""

    name: str
    misses: int

    @classmethod
    def from_json(cls, body: Any) -> MissedFunction:
        """Read one ``most_missed`` item."""
        item = _object(body, "most_missed")
        return cls(_str(item, "name"), _int(item, "misses"))


@dataclass(frozen=True)
class MissedCall:
    """One missed call: the request of its turn, and what the turn was given instead.

    Attributes:
        function: the function called.
        session_id: the session the call was stored in.
        request: the user text of the call's turn.
        routed: the functions the turn was given, pinned ones first.
        at: when the run was stored (Unix seconds).
    """

    function: str
    session_id: str
    request: str
    routed: tuple[str, ...]
    at: float

    @classmethod
    def from_json(cls, body: Any) -> MissedCall:
        """Read one ``latest`` item."""
        item = _object(body, "latest")
        routed = _list(item.get("routed"), "routed")
        if not all(isinstance(name, str) for name in routed):
            raise TypeError("routed: expected a list of strings")
        return cls(
            function=_str(item, "function"),
            session_id=_str(item, "session_id"),
            request=_str(item, "request"),
            routed=tuple(routed),
            at=_float(item, "at"),
        )


@dataclass(frozen=True)
class Misses:
    """A catalog's miss rate, the functions missed most and the latest missed calls.

    Attributes:
        namespace: the catalog.
        miss_rate: missed / checked; None before any call is checked.
        checked: calls checked (routed + searched + missed); calls of unrouted sessions are left out.
        counts: the checked calls by outcome.
        most_missed: up to 10 functions, most missed first.
        latest: the latest missed calls, newest first (``limit`` of them at most).
    """

    namespace: str
    miss_rate: float | None
    checked: int
    counts: OutcomeCounts
    most_missed: tuple[MissedFunction, ...]
    latest: tuple[MissedCall, ...]

    @classmethod
    def from_json(cls, body: Any) -> Misses:
        """Read a ``GET /v1/catalogs/{namespace}/misses`` answer."""
        data = _object(body, "misses")
        return cls(
            namespace=_str(data, "namespace"),
            miss_rate=_optional_float(data, "miss_rate"),
            checked=_int(data, "checked"),
            counts=OutcomeCounts.from_json(data.get("counts")),
            most_missed=tuple(MissedFunction.from_json(f) for f in _list(data.get("most_missed"), "most_missed")),
            latest=tuple(MissedCall.from_json(c) for c in _list(data.get("latest"), "latest")),
        )
