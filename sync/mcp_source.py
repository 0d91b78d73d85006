"""MCP servers as a catalog source: each upstream server's ``tools/list`` kept as a namespace.

An upstream is an MCP server reached by a stdio command or a streamable HTTP URL. Its tools
are stored verbatim in the MCP shape (``{"name", "description", "inputSchema", ...}``),
listed again when the server sends ``notifications/tools/list_changed`` and every
``resync_seconds``. A listing that fails, or a later one that lists no tools, changes
nothing: the stored namespace stays as it was (with the usage examples it taught) and a failed
connection is retried with backoff. Calls to the upstream's tools are forwarded
through the same client session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.session import IncomingMessage
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from router.catalog.functions import FunctionDef, parse_function
from router.common.errors import CatalogInvalid
from sync.upstream import UpstreamConfig

log = logging.getLogger(__name__)
# A paginating server that never stops must not hang a sync.
MAX_PAGES = 1000
MAX_BACKOFF_SECONDS = 60.0


class CatalogSink(Protocol):
    """Where listed functions go (``CatalogService`` in-process, or a router over HTTP)."""

    async def apply(self, namespace: str, functions: Sequence[FunctionDef], *, source: str) -> object:
        """Make ``namespace`` hold exactly ``functions``."""


def _reason(exc: BaseException) -> str:
    """What went wrong, in a line: the first failure inside task groups' exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc) or type(exc).__name__


def error_result(text: str) -> types.CallToolResult:
    """A tool result that reports a failure to the model."""
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def functions_from_tools(tools: Sequence[types.Tool], *, where: str) -> list[FunctionDef]:
    """Catalog functions from listed tools, verbatim; invalid or repeated tools are skipped with a warning."""
    functions: dict[str, FunctionDef] = {}
    for index, tool in enumerate(tools):
        definition = tool.model_dump(by_alias=True, mode="json", exclude_unset=True)
        try:
            function = parse_function(definition, where=f"{where}: tools[{index}]")
        except CatalogInvalid as exc:
            log.warning("upstream tool skipped", extra={"detail": exc.detail})
            continue
        if function.name in functions:
            log.warning("upstream tool skipped", extra={"detail": f"{where}: duplicate tool {function.name!r}"})
            continue
        functions[function.name] = function
    return list(functions.values())


async def _list_all(session: ClientSession) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools
    raise RuntimeError(f"tools/list did not end after {MAX_PAGES} pages")


class McpSource:
    """Keeps one upstream's namespace equal to its ``tools/list`` and forwards calls to it.

    Args:
        config: the upstream.
        sink: where its functions are applied.
    """

    def __init__(self, config: UpstreamConfig, sink: CatalogSink) -> None:
        self.config = config
        self._sink = sink
        self.tools: dict[str, types.Tool] = {}
        self.syncs = 0
        self.listed = asyncio.Event()
        self._session: ClientSession | None = None
        self._wake = asyncio.Event()
        self._broken = False
        self.failure: str | None = None  # why the last connection failed, until one lists the tools

    @property
    def namespace(self) -> str:
        """The namespace the tools are stored in."""
        return self.config.target

    @property
    def source(self) -> str:
        """How the namespace's source is recorded."""
        return f"mcp:{self.config.name}"

    async def run(self) -> None:
        """Connect, list and apply, then follow changes; reconnect with backoff after any failure."""
        delay = 1.0
        while True:
            synced = self.syncs
            try:
                async with self._connect() as session:
                    self._session = session
                    await self._follow(session)
            except Exception as exc:
                self.failure = _reason(exc)
                log.warning(
                    "upstream unavailable; its catalog is unchanged",
                    extra={"upstream": self.config.name, "target": self.config.describe(), "detail": repr(exc)},
                )
            finally:
                self._session = None
                self.listed.set()
            # Only a connection that applied its tools starts the backoff over: one that connects, then
            # fails each time (a catalog over the limit) would restart a stdio upstream every second.
            if self.syncs > synced:
                delay = 1.0
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF_SECONDS)

    @contextlib.asynccontextmanager
    async def _connect(self) -> AsyncIterator[ClientSession]:
        config = self.config
        async with contextlib.AsyncExitStack() as stack:
            if config.url is not None:
                read, write = await stack.enter_async_context(streamable_http_client(config.url))
            else:
                params = StdioServerParameters(
                    command=config.command or "", args=list(config.args), env=dict(config.env), cwd=config.cwd
                )
                read, write = await stack.enter_async_context(stdio_client(params))
            session = await stack.enter_async_context(ClientSession(read, write, message_handler=self._on_message))
            with anyio.fail_after(config.timeout_seconds):
                await session.initialize()
            self._broken = False
            yield session

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._wake.set()
        elif isinstance(message, Exception):
            log.warning("upstream stream error", extra={"upstream": self.config.name, "detail": repr(message)})

    async def _follow(self, session: ClientSession) -> None:
        while True:
            self._wake.clear()
            await self.sync(session)
            with anyio.move_on_after(self.config.resync_seconds):
                await self._wake.wait()
            if self._broken:
                raise ConnectionError("the upstream connection closed")
            # Let a burst of change notifications settle into one listing.
            await asyncio.sleep(0.05)

    async def sync(self, session: ClientSession) -> None:
        """List every page of tools and apply them; raises (changing nothing) when listing fails."""
        with anyio.fail_after(self.config.timeout_seconds):
            tools = await _list_all(session)
        functions = functions_from_tools(tools, where=f"upstream {self.config.name}")
        kept = {f.name for f in functions}
        changed = kept != set(self.tools) or self.syncs == 0
        self.tools = {t.name: t for t in tools if t.name in kept}
        if functions or self.syncs == 0:  # the first listing makes the namespace, even empty: find_tools reads it
            await self._sink.apply(self.namespace, functions, source=self.source)
        else:  # a server restarting, or broken, may list none for a while: its catalog and what it taught stay
            named = {"upstream": self.config.name, "namespace": self.namespace}
            log.warning("upstream lists no tools; kept the stored catalog", extra=named)
        self.syncs += 1
        self.failure = None
        self.listed.set()
        extra = {"upstream": self.config.name, "namespace": self.namespace, "tools": len(kept)}
        log.log(logging.INFO if changed else logging.DEBUG, "upstream listed", extra=extra)

    def _reconnect(self) -> None:
        self._broken = True
        self._wake.set()

    async def call(self, name: str, arguments: Mapping[str, Any]) -> types.CallToolResult:
        """Forward a tool call upstream; failures come back as error results."""
        session = self._session
        if session is None:
            return error_result(f"upstream {self.config.name!r} is not connected (retrying in the background)")
        try:
            result = await session.call_tool(name, dict(arguments), read_timeout_seconds=self.config.timeout_seconds)
        except MCPError as exc:
            # An HTTP upstream that restarted answers "session not found": the session is gone, not the call.
            # A call that timed out is not asked about: the server may still be busy with it.
            if exc.code == types.CONNECTION_CLOSED or (
                exc.code != types.REQUEST_TIMEOUT and not await self._answers(session)
            ):
                self._reconnect()
            return error_result(f"upstream {self.config.name!r} refused {name!r}: {exc.message}")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            self._reconnect()
            return error_result(f"upstream {self.config.name!r} is disconnected: {exc!r}")
        except Exception as exc:
            return error_result(f"upstream {self.config.name!r} failed on {name!r}: {exc!r}")
        return types.CallToolResult(
            meta=result.meta,
            content=result.content,
            structured_content=result.structured_content,
            is_error=result.is_error,
        )

    async def _answers(self, session: ClientSession) -> bool:
        """Whether the session still answers a ping."""
        try:
            with anyio.fail_after(self.config.timeout_seconds):
                await session.send_ping()
        except Exception:
            return False
        return True


class McpSources:
    """Every configured upstream, each followed by its own task.

    Args:
        configs: the upstreams; names and namespaces must be unique (``router mcp`` checks).
        sink: where their functions are applied.
    """

    def __init__(self, configs: Sequence[UpstreamConfig], sink: CatalogSink) -> None:
        self.sources = [McpSource(c, sink) for c in configs]
        self._tasks: list[asyncio.Task[None]] = []

    def filling(self, namespace: str) -> McpSource | None:
        """The upstream whose tools ``namespace`` holds, if any."""
        return next((s for s in self.sources if s.namespace == namespace), None)

    def owner(self, namespace: str, name: str) -> McpSource | None:
        """The upstream serving tool ``name`` of ``namespace``, if it lists it now."""
        source = self.filling(namespace)
        return source if source is not None and name in source.tools else None

    async def start(self) -> None:
        """Start following every upstream; wait (up to twice the longest timeout) until each is listed or failed."""
        self._tasks = [asyncio.create_task(s.run(), name=f"mcp-upstream-{s.config.name}") for s in self.sources]
        longest = max((s.config.timeout_seconds for s in self.sources), default=0)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(longest * 2):
                await asyncio.gather(*(s.listed.wait() for s in self.sources))

    async def stop(self) -> None:
        """Close every upstream session (stopping stdio servers)."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
