"""A posted message: every shape a chat or a Responses item takes, with the fields storage keys on checked."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails

from router.sessions.history import SOURCES


class Message(BaseModel):
    """A chat message, or an item of OpenAI's Responses API (a ``type``, with or without a role).

    Fields beyond role and content (tool calls, names, ids, an item's own fields) are kept.
    """

    model_config = ConfigDict(strict=True, extra="allow")

    role: str | None = Field(
        None, min_length=1, examples=["user"], description="required, except for a Responses item with a `type`"
    )
    content: Any = Field(None, description="text, or a list of content parts")

    def as_dict(self) -> dict[str, Any]:
        """The message as posted (a Responses item without a role stays without one)."""
        return self.model_dump(exclude={"role"} if self.role is None else None)

    @field_validator("content", mode="before")
    @classmethod
    def _text_or_parts(cls, content: Any) -> Any:
        if content is not None and not isinstance(content, str | list):
            raise ValueError("must be text, a list of content parts, or null")
        return content

    @model_validator(mode="before")
    @classmethod
    def _shapes(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        problems: list[InitErrorDetails] = []
        if data.get("role") is None and not isinstance(data.get("type"), str):
            # Reported as the role field missing, as when role was required of every message.
            problems.append(InitErrorDetails(type="missing", loc=("role",), input=data))
        if data.get("source") is not None and data["source"] not in SOURCES:  # a typo would store it as external
            expected = ", ".join(repr(s) for s in SOURCES)
            problems.append(
                InitErrorDetails(
                    type="literal_error", loc=("source",), input=data["source"], ctx={"expected": expected}
                )
            )
        for key in ("id", "message_id"):  # 5 and "5" would name one stored message
            if data.get(key) is not None and not isinstance(data[key], str):
                problems.append(InitErrorDetails(type="string_type", loc=(key,), input=data[key]))
        calls = data.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            problems.append(InitErrorDetails(type="list_type", loc=("tool_calls",), input=calls))
        elif calls is not None:
            problems += [
                InitErrorDetails(type="dict_type", loc=("tool_calls", i), input=call)
                for i, call in enumerate(calls)
                if not isinstance(call, dict)
            ]
        if problems:
            raise ValidationError.from_exception_data("Message", problems)
        return data
