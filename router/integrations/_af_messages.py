"""Agent Framework messages to and from the OpenAI shape the sidecar stores."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from agent_framework import Content, Message


def _arguments(arguments: Any) -> str:
    if arguments is None:
        return "{}"
    return arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)


def to_router(messages: Sequence[Message], *, source: str) -> list[dict[str, Any]]:
    """Agent Framework messages in the OpenAI shape the sidecar stores, stamped and with ids.

    Function results become one ``tool`` message each; messages with neither text, calls
    nor results (usage, reasoning) are left out. Ids make a retried post store them once.
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
                converted.append({"role": "tool", "tool_call_id": result.call_id, "content": output})
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
        for call in stored.get("tool_calls") or []:
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
