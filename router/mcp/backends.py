"""Where ``router mcp`` routes: a runtime in this process, or a router reached over HTTP
(``router.mcp.remote``).

Both implement ``Backend``: ``route`` a query in one namespace, and ``apply`` a namespace's
functions (the sink of the MCP upstream source). Failures raise the router's error family
(``NamespaceNotFound``, ``InvalidRequest``, ``Unavailable``, ...) with a detail fit to show.

What a session found makes its working set, its tools. State lives on the MCP connection
(``Connection.state`` of the ``mcp`` SDK), so it is born with the session, dies with it, and is
never shared between sessions.
"""

from __future__ import annotations

import asyncio
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from router.catalog.functions import FunctionDef
from router.common.errors import Unavailable
from router.routing.routed import Turn, pinned_first
from router.server.runtime import Runtime
from router.server.settings import Settings
from router.storage.base import StorageUnavailable

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

# How long a route waits for the model and the first catalog sync.
READY_SECONDS = 300.0


@dataclass(frozen=True)
class Found:
    """A function found for a query.

    Attributes:
        namespace: the catalog it belongs to.
        name: its name.
        description: what it does.
        score: the router's score for the query (higher is better).
        input_schema: its JSON-schema parameters.
        pinned: returned because the catalog pins it.
    """

    namespace: str
    name: str
    description: str
    score: float
    input_schema: Mapping[str, Any]
    pinned: bool = False


_STATE_KEY = "tool_router.working_set"
# Between a catalog and a function name when two catalogs of a session share the name.
QUALIFIER = "__"


def qualified(function: Found) -> str:
    """``namespace__name``: the name a function always answers to, whoever else shares its name."""
    return f"{function.namespace}{QUALIFIER}{function.name}"


class WorkingSet:
    """The functions a session found, at most ``limit``: the least recently found leave first.

    A function is its catalog's and its name: two catalogs (two upstream servers, say) may both
    have a ``search``, and both stay. A name held by one function of the set is its tool name;
    a name several hold is qualified for each as ``namespace__name`` (``qualified``), and so is
    a name that is another's qualified one (``travel__search`` beside ``travel``'s and
    ``shop``'s ``search``): no two tools share a name, and the names depend on the set alone.

    Args:
        limit: how many functions the session keeps; the least recently found go first.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._entries: OrderedDict[tuple[str, str], Found] = OrderedDict()

    def tools(self) -> list[tuple[str, Found]]:
        """Each function with its tool name (see the class), the latest found first."""
        found = list(reversed(self._entries.values()))
        shared = {name for name, count in Counter(f.name for f in found).items() if count > 1}
        taken = {qualified(f) for f in found if f.name in shared}
        named: list[tuple[str, Found]] = []
        used: set[str] = set()
        for f in found:
            name = base = qualified(f) if f.name in shared or f.name in taken else f.name
            # "a__b"'s "c" and "a"'s "b__c" both qualify as "a__b__c": the later found is numbered.
            number = 1
            while name in used:
                number += 1
                name = f"{base}_{number}"
            used.add(name)
            named.append((name, f))
        return named

    def get(self, name: str) -> Found | None:
        """The function whose tool name, or qualified name, is ``name``, if the session found it."""
        listed = dict(self.tools())
        return listed.get(name) or next((f for f in listed.values() if qualified(f) == name), None)

    def sharing(self, name: str) -> list[str]:
        """The tool names of the functions called ``name``, when several catalogs have one."""
        return [tool for tool, f in self.tools() if f.name == name and tool != name]

    def names(self) -> list[str]:
        """The functions' tool names, in the order of ``tools``."""
        return [name for name, _ in self.tools()]

    def add(self, found: Sequence[Found]) -> bool:
        """Add (or refresh) ``found``, best first; they become the latest found, the best of them last to leave.

        Returns:
            Whether the set of tools changed (a function came in or went out).
        """
        before = set(self._entries)
        for function in reversed(found):
            key = (function.namespace, function.name)
            self._entries.pop(key, None)
            self._entries[key] = function
        while len(self._entries) > self.limit:
            self._entries.popitem(last=False)
        return before != set(self._entries)


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


class Backend(Protocol):
    """Routes queries and stores catalogs; started before use and stopped after."""

    async def start(self) -> None:
        """Acquire what routing needs (model and storage, or the HTTP connection)."""

    async def stop(self) -> None:
        """Release it."""

    async def route(self, namespace: str, query: str, *, max_functions: int | None) -> list[Found]:
        """The functions of ``namespace`` that matter for ``query``, pinned ones first."""

    async def apply(self, namespace: str, functions: Sequence[FunctionDef], *, source: str) -> object:
        """Make ``namespace`` hold exactly ``functions``."""


def message(query: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": query}]


class EmbeddedBackend:
    """A ``Runtime`` in this process (storage, model, catalog worker), routing through ``TurnRouter``.

    Args:
        settings: the runtime's settings.
        runtime: a runtime to use instead of building one (tests share a loaded model).
    """

    def __init__(self, settings: Settings, *, runtime: Runtime | None = None) -> None:
        self.runtime = runtime or Runtime(settings)

    async def start(self) -> None:
        """Open storage and load the model (the catalog sync goes on in the background)."""
        await self.runtime.start()

    async def stop(self) -> None:
        """Stop the worker, release the model and storage."""
        await self.runtime.stop()

    async def _ready(self) -> None:
        try:
            async with asyncio.timeout(READY_SECONDS):
                await self.runtime.wait_ready()
        except TimeoutError:
            raise Unavailable(f"the router is not ready after {READY_SECONDS:g} s") from None

    async def route(self, namespace: str, query: str, *, max_functions: int | None) -> list[Found]:
        """Route ``query`` as a single user message, without history."""
        await self._ready()
        turns = self.runtime.turns
        turn = Turn(
            namespace=namespace,
            messages=message(query),
            max_functions=max_functions or turns.settings.max_functions,
            recent_messages=0,
            history_messages=0,
        )
        try:
            routed = await turns.route(turn)
        except StorageUnavailable as exc:
            raise Unavailable(str(exc)) from exc
        return [
            Found(namespace, f.name, f.description, score, f.parameters, pinned)
            for f, score, pinned in pinned_first(routed)
        ]

    async def apply(self, namespace: str, functions: Sequence[FunctionDef], *, source: str) -> object:
        """Reconcile ``namespace`` through the catalog service (embedding only what changed)."""
        await self.runtime.started.wait()
        return await self.runtime.service.apply(namespace, functions, source=source)
