"""The router as an MCP server: ``find_tools`` plus a per-session working set of found tools.

A session starts with one tool, ``find_tools(query, max_functions?)``. Each call routes the
query in the served namespaces and answers the functions with their scores and JSON schemas;
they join the session's tools and the client gets ``notifications/tools/list_changed``.
Calling a found tool forwards it to the upstream MCP server it came from; a function of any
other catalog has no executor here, and the call says so.

The server speaks the session (handshake) protocol era: a working set needs a session. Over
streamable HTTP it answers ``server/discover`` with the handshake versions only (over stdio the
SDK answers it "Method not found"), so that clients which probe for the stateless 2026 era fall
back to ``initialize``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from router.common import version
from router.common.errors import RouterError
from router.mcp.backends import Backend, Found, working_set
from sync.mcp_source import McpSources, error_result

FIND_TOOLS = "find_tools"
MAX_FUNCTIONS_LIMIT = 128
INSTRUCTIONS = (
    "This server finds tools. Call find_tools with what you need to do, in plain words; the "
    "matching functions come back with scores and JSON schemas, and are added to your tools."
)
_FUNCTION_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "tool": {
            "type": "string",
            "description": "the name to call it by in this session: its name, or namespace__name when "
            "another catalog's function of this session has the same name",
        },
        "namespace": {"type": "string"},
        "description": {"type": "string"},
        "score": {"type": "number"},
        "pinned": {"type": "boolean"},
        "callable": {"type": "boolean", "description": "whether calling it here runs it (on an upstream server)"},
        "inputSchema": {"type": "object"},
    },
    "required": ["name", "tool", "namespace", "description", "score", "pinned", "callable", "inputSchema"],
}
FIND_TOOLS_TOOL = types.Tool(
    name=FIND_TOOLS,
    title="Find tools",
    description=(
        "Find the tools that fit a task. Describe what you need in plain words (for example "
        "'find me a flight from Lisbon to Rome'). The best matching functions come back with their "
        "scores and JSON schemas, and are added to your tool list for the rest of this session."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "description": "what you need to do"},
            "max_functions": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_FUNCTIONS_LIMIT,
                "description": "how many functions to return (default 3)",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "functions": {"type": "array", "items": _FUNCTION_SCHEMA},
            "tools": {"type": "array", "items": {"type": "string"}, "description": "this session's tools now"},
            "unavailable": {"type": "array", "items": {"type": "string"}, "description": "catalogs not searched"},
        },
        "required": ["query", "functions", "tools", "unavailable"],
    },
    annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
)


@dataclass(frozen=True)
class Finding:
    """What ``find_tools`` found across the served namespaces.

    Attributes:
        functions: pinned functions first, then the best scored; each function of a catalog once.
        unavailable: why some namespaces could not be searched.
    """

    functions: list[Found]
    unavailable: list[str]


class _SessionServer(Server[Any]):
    """A lowlevel server that advertises ``tools.listChanged`` on every transport."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), experimental_capabilities, extensions
        )


class ToolRouterServer:
    """Serves ``find_tools`` and each session's working set over MCP.

    Args:
        backend: where queries are routed.
        namespaces: the catalogs searched, together.
        sources: the upstream MCP servers whose tools are forwarded.
        max_functions: functions returned when ``find_tools`` does not say (the backend's default if unset).
        working_set: how many found tools a session keeps (least recently found leave first).
    """

    def __init__(
        self,
        backend: Backend,
        namespaces: Sequence[str],
        *,
        sources: McpSources | None = None,
        max_functions: int | None = None,
        working_set: int = 20,
    ) -> None:
        self.backend = backend
        self.namespaces = list(dict.fromkeys(namespaces))
        self.sources = sources
        self.max_functions = max_functions
        self.working_set_limit = working_set
        self.server = _SessionServer(
            "tool-router",
            version=version(),
            title="Tool router",
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self.server.add_request_handler("server/discover", types.RequestParams, self._discover)

    async def find(self, query: str, *, max_functions: int | None = None) -> Finding:
        """Route ``query`` in every served namespace and merge the answers by score."""
        wanted = max_functions or self.max_functions
        answers = await asyncio.gather(
            *(self.backend.route(ns, query, max_functions=wanted) for ns in self.namespaces), return_exceptions=True
        )
        found: list[Found] = []
        unavailable: list[str] = []
        for namespace, answer in zip(self.namespaces, answers, strict=True):
            if isinstance(answer, RouterError):
                unavailable.append(f"{namespace}: {self._why(namespace, answer)}")
            elif isinstance(answer, BaseException):
                raise answer
            else:
                found.extend(answer)
        if unavailable and len(unavailable) == len(self.namespaces):
            raise RouterError("; ".join(unavailable))
        limit = wanted or max((sum(not f.pinned for f in a) for a in answers if isinstance(a, list)), default=0)
        # Keyed by catalog too: a name two catalogs share is two functions (the working set tells them apart).
        chosen: dict[tuple[str, str], Found] = {}
        for function in [f for f in found if f.pinned]:
            chosen.setdefault((function.namespace, function.name), function)
        ranked = 0
        for function in sorted((f for f in found if not f.pinned), key=lambda f: -f.score):
            if ranked < limit and (function.namespace, function.name) not in chosen:
                chosen[(function.namespace, function.name)] = function
                ranked += 1
        return Finding(list(chosen.values()), unavailable)

    def _why(self, namespace: str, error: RouterError) -> str:
        """Why ``namespace`` could not be searched: an upstream that never listed says why, not "no catalog"."""
        source = self.sources.filling(namespace) if self.sources else None
        if source is None or source.syncs or source.failure is None:
            return error.detail
        return f"upstream {source.config.name!r} has not been listed ({source.failure}); retrying in the background"

    def _tool(self, name: str, function: Found) -> types.Tool:
        source = self.sources.owner(function.namespace, function.name) if self.sources else None
        if source is not None:
            listed = source.tools[function.name]
            return listed if listed.name == name else listed.model_copy(update={"name": name})
        return types.Tool(
            name=name,
            description=function.description,
            input_schema={"type": "object", **function.input_schema},
        )

    async def _discover(self, _ctx: ServerRequestContext[Any], _params: types.RequestParams) -> types.DiscoverResult:
        return types.DiscoverResult(
            supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
            capabilities=self.server.get_capabilities(NotificationOptions(tools_changed=True)),
            instructions=INSTRUCTIONS,
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        found = working_set(ctx, limit=self.working_set_limit).tools()
        return types.ListToolsResult(tools=[FIND_TOOLS_TOOL, *(self._tool(name, f) for name, f in found)])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = params.arguments or {}
        if params.name == FIND_TOOLS:
            return await self._find_tools(ctx, arguments)
        tools = working_set(ctx, limit=self.working_set_limit)
        function = tools.get(params.name)
        if function is None and (sharing := tools.sharing(params.name)):
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Ambiguous tool: several catalogs have {params.name!r}; call one of {sharing}",
            )
        if function is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Unknown tool: {params.name!r} is not among this session's tools; call find_tools first",
            )
        upstream = self.sources.filling(function.namespace) if self.sources else None
        if upstream is None:
            return error_result(
                f"{function.name!r} (catalog {function.namespace!r}) is routed by the tool router, which has no "
                "executor for it: run it with your own implementation, using the schema from find_tools"
            )
        if function.name not in upstream.tools:
            return error_result(f"upstream {upstream.config.name!r} no longer lists {function.name!r}")
        return await upstream.call(function.name, arguments)

    async def _find_tools(self, ctx: ServerRequestContext[Any], arguments: Mapping[str, Any]) -> types.CallToolResult:
        query, wanted = arguments.get("query"), arguments.get("max_functions")
        unknown = sorted(set(arguments) - {"query", "max_functions"})
        if unknown:  # a "namespace" ignored would answer from other catalogs than the caller meant
            return error_result(f"find_tools: unexpected arguments {unknown}; it takes 'query' and 'max_functions'")
        if not isinstance(query, str) or not query.strip():
            return error_result("find_tools: 'query' must be a non-empty string saying what you need to do")
        # A bool is an int to isinstance, not to type.
        if wanted is not None and (type(wanted) is not int or not 1 <= wanted <= MAX_FUNCTIONS_LIMIT):
            return error_result(f"find_tools: 'max_functions' must be an integer from 1 to {MAX_FUNCTIONS_LIMIT}")
        try:
            finding = await self.find(query.strip(), max_functions=wanted)
        except RouterError as exc:
            return error_result(f"find_tools: {exc.detail}")
        tools = working_set(ctx, limit=self.working_set_limit)
        if tools.add([f for f in finding.functions if f.name != FIND_TOOLS]):
            await ctx.session.send_notification(types.ToolListChangedNotification(), related_request_id=ctx.request_id)
        named = {(f.namespace, f.name): name for name, f in tools.tools()}
        answer = {
            "query": query.strip(),
            "functions": [
                {
                    "name": f.name,
                    "tool": named.get((f.namespace, f.name), f.name),
                    "namespace": f.namespace,
                    "description": f.description,
                    "score": round(f.score, 4),
                    "pinned": f.pinned,
                    # Past the working set's size a function is found but not kept: calling it here fails.
                    "callable": (f.namespace, f.name) in named
                    and self.sources is not None
                    and self.sources.owner(f.namespace, f.name) is not None,
                    "inputSchema": dict(f.input_schema),
                }
                for f in finding.functions
            ],
            "tools": [FIND_TOOLS, *tools.names()],
            "unavailable": finding.unavailable,
        }
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(answer, ensure_ascii=False))], structured_content=answer
        )
