"""The parts of ``RouterContextProvider``: messages, the search tool and the tool filter.

Messages go to and from the OpenAI shape the sidecar stores; a model's search goes to the
router's ``/v1/tool_search``; a chat middleware keeps each run's tools to the routed ones.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent_framework import ChatContext, ChatMiddleware, Content, FunctionTool, Message

from router.client import RouterClientError, ToolSearchResult, TransportError, UnavailableError

if TYPE_CHECKING:
    from router.integrations.agent_framework import RouterContextProvider

log = logging.getLogger("router.integrations.agent_framework")


def trouble(exc: RouterClientError) -> str:
    """How a failed call opens its log line: the sidecar down, or refusing what was asked."""
    down = isinstance(exc, TransportError | UnavailableError)
    return "tool router unavailable" if down else "tool router refused the request"


SEARCH_TOOL = "tool_search"
# The most functions a route may answer: how far to look for an agent's own tools.
WIDEST = 128
PARAMETERS = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What you need to do, in plain words"},
    },
    "required": ["query"],
}


async def search_tool(
    provider: RouterContextProvider, middleware: RoutedTools, *, session_id: str | None, user_id: str | None
) -> FunctionTool:
    """One run's ``tool_search`` tool: what a search finds joins what ``middleware`` advertises.

    Only functions the agent has are loaded (a catalog may be shared by agents with fewer tools): the
    search reaches past the others. Searches carry the session (whose messages add context) and the
    user of the session.
    """

    async def search(query: str, max_functions: int | None) -> ToolSearchResult:
        return await provider.client.tool_search(
            provider.namespace,
            query,
            format="plain",
            max_functions=max_functions,
            session_id=session_id,
            user_id=user_id or provider.user_id,
        )

    async def tool_search(query: str) -> str:
        # The model calls this after a request went through the middleware, which saw the agent's tools.
        held = middleware.offered if not middleware.known <= middleware.offered else set()
        try:
            found = await search(query, provider.search_functions)
            wanted = provider.search_functions or len(found.functions)  # the sidecar's default when unset
            kept = [f for f in found.functions if not held or f.name in held]
            if len(kept) < wanted == len(found.functions):  # the agent lacks some: the search reaches further
                kept = [f for f in (await search(query, WIDEST)).functions if f.name in held][:wanted]
        except RouterClientError as exc:
            log.warning("%s, the search found nothing: %s", trouble(exc), exc)
            return json.dumps({"error": f"the tool search is unavailable: {exc}"})
        middleware.routed.update(f.name for f in kept)
        functions = [{"name": f.name, "description": f.description} for f in kept]
        return json.dumps({"loaded": functions, "note": "these functions can be called now"}, ensure_ascii=False)

    description = await _description(provider)
    tool: Any = FunctionTool(name=SEARCH_TOOL, description=description, func=tool_search, input_model=PARAMETERS)
    return tool  # type: ignore[no-any-return]


async def widened(
    provider: RouterContextProvider,
    messages: list[dict[str, Any]],
    session_id: str | None,
    user_id: str | None,
    count: int,
    held: set[str],
) -> list[str]:
    """The best ``count`` functions of ``held`` (a request's catalog tools) for the run's input, routed again wider."""
    try:
        routed = await provider.client.route(
            provider.namespace,
            [{"role": m["role"], "content": m.get("content")} for m in messages],
            session_id=session_id,
            user_id=user_id,
            max_functions=WIDEST,
            recent_messages=provider.recent_messages,
            min_score=provider.min_score,
            pinned=provider.pinned,
            history_messages=0,
        )
    except RouterClientError as exc:
        log.warning("%s, advertising every tool: %s", trouble(exc), exc)
        return sorted(held)
    best = [name for name in routed.names if name in held][:count]
    log.warning("the routed functions are not among the agent's tools; advertising its best instead: %s", best)
    return best


async def _description(provider: RouterContextProvider) -> str:
    """The router's summary of the catalog, kept for ``catalog_ttl`` (a generic one when the router cannot say)."""
    cached = provider._search_description
    if cached is not None and time.monotonic() - cached[0] < provider.catalog_ttl:
        return cached[1]
    try:
        listed = await provider.client.tools(provider.namespace, format="anthropic")
        text = str(listed.tools[0]["description"])
    except (RouterClientError, IndexError, KeyError):
        return f"Search the {provider.namespace!r} catalog for the functions a task needs, and load them."
    provider._search_description = (time.monotonic(), text)
    return text


def _arguments(arguments: Any) -> str:
    if arguments is None:
        return "{}"
    return arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)


def to_router(messages: Sequence[Message], *, source: str) -> list[dict[str, Any]]:
    """Agent Framework messages in the OpenAI shape the sidecar stores, stamped and with ids.

    Function results become one ``tool`` message each (``is_error`` when the function raised);
    messages with neither text, calls nor results (usage, reasoning) are left out. Ids make a
    retried post store them once.
    """
    converted: list[dict[str, Any]] = []
    for message in messages:
        text = message.text
        calls = [c for c in message.contents if c.type == "function_call" and c.call_id and c.name]
        if message.role != "tool" and (text or calls):
            item: dict[str, Any] = {"role": message.role, "content": text or None}
            if calls:
                item["tool_calls"] = [
                    {
                        "id": c.call_id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": _arguments(c.arguments)},
                    }
                    for c in calls
                ]
            if message.author_name:
                item["name"] = message.author_name
            converted.append(item)
        for result in message.contents:
            if result.type == "function_result" and result.call_id:
                output = result.result if isinstance(result.result, str) else json.dumps(result.result, default=str)
                item = {"role": "tool", "tool_call_id": result.call_id, "content": output}
                # A function that raised: its call teaches the router nothing.
                converted.append({**item, "is_error": True} if result.exception else item)
    return [{**item, "source": source, "id": uuid.uuid4().hex} for item in converted]


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return ""


def from_router(history: Sequence[Mapping[str, Any]]) -> list[Message]:
    """Stored messages as Agent Framework messages.

    A window of history may cut a tool call from its result: calls without a result and
    results without a call are left out, since chat services reject either.
    """
    last_result = {m.get("tool_call_id"): i for i, m in enumerate(history) if m.get("role") == "tool"}
    called: set[str] = set()
    messages: list[Message] = []
    for position, stored in enumerate(history):
        role = stored.get("role")
        if not isinstance(role, str):
            continue
        if role == "tool":
            call_id = stored.get("tool_call_id")
            if isinstance(call_id, str) and call_id in called:
                messages.append(Message("tool", [Content.from_function_result(call_id, result=_text(stored))]))
            continue
        contents = [Content.from_text(text)] if (text := _text(stored)) else []
        listed = stored.get("tool_calls")
        for call in listed if isinstance(listed, list) else []:
            function = call.get("function") if isinstance(call, Mapping) else None
            call_id = call.get("id") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping) and isinstance(call_id, str) and last_result.get(call_id, -1) > position:
                called.add(call_id)
                contents.append(
                    Content.from_function_call(call_id, str(function.get("name")), arguments=function.get("arguments"))
                )
        if contents:
            name = stored.get("name")
            messages.append(Message(role, contents, author_name=name if isinstance(name, str) else None))
    return messages


Widen = Callable[[set[str]], Awaitable[list[str]]]


class RoutedTools(ChatMiddleware):
    """Drops, from one run's chat requests, the catalog's tools that were not routed (nor found since).

    When the route chose only functions the agent does not have, none of its catalog tools
    would be left: ``widen`` is then asked (once a run) for the best of those the request holds.
    """

    def __init__(self, routed: set[str], known: frozenset[str], widen: Widen | None = None) -> None:
        self.routed = routed
        self.known = known
        self.widen = widen
        # The catalog tools the agent has: those of its last request (empty until one is seen).
        self.offered: set[str] = set()

    def keeps(self, item: Any) -> bool:
        name = tool_name(item)
        return name is None or name not in self.known or name in self.routed

    async def process(self, context: ChatContext, call_next: Callable[[], Awaitable[None]]) -> None:
        options = context.options
        tools = options.get("tools") if options is not None else None
        if options is not None and isinstance(tools, Sequence) and tools:
            held = {name for t in tools if (name := tool_name(t)) in self.known}
            self.offered = held
            if self.widen is not None and held and not held & self.routed:
                widen, self.widen = self.widen, None
                self.routed.update(await widen(held))
            kept = [t for t in tools if self.keeps(t)]
            if kept:
                context.options = {**options, "tools": kept}
            else:  # a tool choice without tools is rejected by most services
                context.options = {k: v for k, v in options.items() if k not in ("tools", "tool_choice")}
        await call_next()


def tool_name(item: Any) -> str | None:
    """The name of a tool given as a definition or as an object (None when it has none)."""
    if isinstance(item, Mapping):
        inner = item.get("function")
        name = inner.get("name") if isinstance(inner, Mapping) else item.get("name")
    else:
        name = getattr(item, "name", None)
    return name if isinstance(name, str) else None
