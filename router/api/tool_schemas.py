"""Request and response bodies of the tool search endpoints."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from router.api.schemas import IDENTIFIER


class ToolSearchIn(BaseModel):
    """A search call of a model, to answer in the shape of its API."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"namespace": "travel", "query": "book a flight to Rome", "format": "openai", "call_id": "call_1"},
                {"namespace": ["travel", "commerce"], "query": "refund my order", "format": "anthropic",
                 "call_id": "toolu_01", "max_functions": 2},
            ]
        },
    )  # fmt: skip

    namespace: str | list[str] = Field(
        "default", description="the catalog to search, or a list of catalogs searched together (up to 16)"
    )
    query: str = Field(min_length=1, max_length=10_000, description="what the model searched for")
    max_functions: int | None = Field(None, ge=1, le=128, description="functions to find (default 3)")
    session_id: str | None = Field(None, pattern=IDENTIFIER, description="its recent messages add context")
    user_id: str | None = Field(None, pattern=IDENTIFIER)
    format: Literal["openai", "anthropic", "mcp", "plain"] = Field("openai", description="the API whose item to answer")
    call_id: str | None = Field(
        None,
        min_length=1,
        max_length=256,
        description="the search call's id: `call_id` of the `tool_search_call` (OpenAI), `id` of the `tool_use` "
        "(Anthropic, required)",
    )


class FoundFunction(BaseModel):
    """A function a search found."""

    name: str
    namespace: str
    description: str
    score: float


class ToolSearchOut(BaseModel):
    """The item to hand back to the model's API, and what it holds."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "item": {
                        "type": "tool_search_output",
                        "execution": "client",
                        "status": "completed",
                        "call_id": "call_1",
                        "tools": [
                            {
                                "type": "function",
                                "name": "search_flights",
                                "description": "Search flights between two airports on a date.",
                                "parameters": {"type": "object", "properties": {"origin": {"type": "string"}}},
                                "strict": False,
                                "defer_loading": True,
                            }
                        ],
                    },
                    "functions": [
                        {"name": "search_flights", "namespace": "travel", "description": "...", "score": 0.61}
                    ],
                }
            ]
        }
    )

    item: dict[str, Any] = Field(
        description="OpenAI: a `tool_search_output` input item; Anthropic: a `tool_result` content block of "
        "`tool_reference` blocks; MCP: a `tools/list` result; plain: `{functions: [...]}`"
    )
    functions: list[FoundFunction] = Field(description="the functions found, best first")


class CatalogToolsOut(BaseModel):
    """A catalog as one API's ``tools`` array."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "namespace": "travel",
                    "format": "anthropic",
                    "tools": [
                        {
                            "name": "tool_search",
                            "description": "Search the 'travel' catalog for the functions a task needs, and load "
                            "them. It holds 15 functions about: booking, flights, hotel, ...",
                            "input_schema": {
                                "type": "object",
                                "properties": {"query": {"type": "string"}},
                                "required": ["query"],
                            },
                        },
                        {
                            "name": "get_booking",
                            "description": "Look up a booking by its reference.",
                            "input_schema": {"type": "object", "properties": {"reference": {"type": "string"}}},
                        },
                        {
                            "name": "search_flights",
                            "description": "Search flights between two airports on a date.",
                            "input_schema": {"type": "object", "properties": {"origin": {"type": "string"}}},
                            "defer_loading": True,
                        },
                    ],
                }
            ]
        }
    )

    namespace: str
    format: str = Field(description="openai (Responses API) or anthropic (Messages API)")
    tools: list[dict[str, Any]] = Field(
        description="the search tool first, then the loaded functions, then every other function deferred, by name"
    )
