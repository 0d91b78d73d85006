"""The working set of one MCP session: the functions it found, which become its tools.

State lives on the MCP connection (``Connection.state`` of the ``mcp`` SDK), so it is born
with the session, dies with it, and is never shared between sessions.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from mcp.server.context import ServerRequestContext

from router.mcp.backends import Found

__all__ = ["WorkingSet", "working_set"]

_STATE_KEY = "tool_router.working_set"


class WorkingSet:
    """The functions a session found, at most ``limit``: the least recently found leave first.

    Args:
        limit: how many functions the session keeps; the least recently found go first.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._entries: OrderedDict[str, Found] = OrderedDict()

    def get(self, name: str) -> Found | None:
        """The function named ``name``, if the session found it."""
        return self._entries.get(name)

    def entries(self) -> list[Found]:
        """The functions, the latest found first (in the order they were found)."""
        return list(reversed(self._entries.values()))

    def names(self) -> list[str]:
        """Their names, in the order of ``entries``."""
        return list(reversed(self._entries))

    def add(self, found: Sequence[Found]) -> bool:
        """Add (or refresh) ``found``, best first; they become the latest found, the best of them last to leave.

        Returns:
            Whether the set of tools changed (a function came in, went out or changed catalog).
        """
        before = {(f.name, f.namespace) for f in self._entries.values()}
        for function in reversed(found):
            self._entries.pop(function.name, None)
            self._entries[function.name] = function
        while len(self._entries) > self.limit:
            self._entries.popitem(last=False)
        return before != {(f.name, f.namespace) for f in self._entries.values()}


def _connection_state(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
    # The SDK (2.3) keeps per-connection scratch state on `Connection.state`, but lowlevel
    # handlers only get a per-request `ServerSession` whose connection is not public yet
    # (the SDK's pending Context rework exposes it as `ctx.connection`). Prefer the public
    # attribute when it exists; a request without a connection (the stateless 2026 era)
    # gets a fresh state, so nothing ever leaks between sessions.
    connection = getattr(ctx, "connection", None) or getattr(ctx.session, "_connection", None)
    state = getattr(connection, "state", None)
    return state if isinstance(state, dict) else {}


def working_set(ctx: ServerRequestContext[Any, Any], *, limit: int) -> WorkingSet:
    """The working set of the MCP session that ``ctx`` belongs to (created on first use)."""
    state = _connection_state(ctx)
    current = state.get(_STATE_KEY)
    if not isinstance(current, WorkingSet):
        current = state[_STATE_KEY] = WorkingSet(limit)
    return current
