"""Request and response bodies of the HTTP API (contract v1)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from router.api.messages import Message

NAMESPACE = r"^[A-Za-z0-9_.-]{1,64}$"
# Session and user ids: 1-256 characters, no control characters, no "/" (a session id is a path segment).
IDENTIFIER = r"^[^\x00-\x1f\x7f-\x9f/]{1,256}$"


class ErrorOut(BaseModel):
    """Every error: its kind and what went wrong where."""

    error: str = Field(examples=["NamespaceNotFound"])
    detail: str = Field(examples=["no catalog named 'travel'"])
    request_id: str | None = Field(None, description="the request's id, as in its X-Request-ID header and logs")


class CatalogIn(BaseModel):
    """A whole catalog: function definitions in the OpenAI, bare or MCP shape."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "functions": [
                        {
                            "name": "get_weather",
                            "description": "Current weather for a city.",
                            "parameters": {
                                "type": "object",
                                "properties": {"city": {"type": "string", "description": "City name"}},
                                "required": ["city"],
                            },
                        }
                    ]
                }
            ]
        },
    )

    functions: list[Any] = Field(description="function definitions, kept verbatim")
    pinned: list[str] = Field(default_factory=list, description="names always returned with a route")


class ReconcileOut(BaseModel):
    """What a catalog write changed, in functions."""

    namespace: str
    added: int
    updated: int
    removed: int
    unchanged: int


class CatalogInfo(BaseModel):
    """A known catalog."""

    namespace: str
    source: str = Field(description="'api', or 'dir:<path>' for a catalog directory")
    count: int
    updated_at: float = Field(description="Unix time of the last change")
    pinned: list[str] = Field(default_factory=list, description="names always returned with a route")


class CatalogOut(CatalogInfo):
    """A catalog with its definitions, verbatim."""

    functions: list[dict[str, Any]]


class CatalogsOut(BaseModel):
    """Every known catalog."""

    catalogs: list[CatalogInfo]


class RouteIn(BaseModel):
    """A turn of a conversation to route."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "namespace": "travel",
                    "messages": [{"role": "user", "content": "Find me a flight from Lisbon to Rome on Friday"}],
                    "max_functions": 3,
                }
            ]
        },
    )

    namespace: str = Field("default", pattern=NAMESPACE)
    session_id: str | None = Field(None, pattern=IDENTIFIER)
    user_id: str | None = Field(None, pattern=IDENTIFIER)
    messages: list[Message] = Field(min_length=1, description="the new messages of this turn")
    max_functions: int | None = Field(None, ge=1, le=128, description="functions to return (default 3)")
    recent_messages: int | None = Field(
        None, ge=0, le=100, description="earlier session messages that add context (default 2)"
    )
    min_score: float | None = Field(None, ge=-1.0, le=1.0, description="drop functions scoring below this")
    pinned: list[str] = Field(
        default_factory=list, max_length=64, description="functions always included, beside max_functions"
    )
    history_messages: int | None = Field(
        None, ge=0, le=1000, description="session messages returned in `history` (default 20)"
    )
    explain: bool = Field(False, description="add to each function the parts of its score (`explanation`)")
    defer_rest: bool = Field(
        False,
        description="`tools` holds the routed functions loaded, every other catalog function deferred "
        "(`defer_loading`) and the client-executed search tool, in the shape of `format`",
    )
    format: Literal["openai", "anthropic"] = Field(
        "openai",
        description="the API whose `tools` array to answer: OpenAI (Chat Completions; Responses with `defer_rest`) "
        "or Anthropic (Messages)",
    )


class ExampleMatch(BaseModel):
    """The stored request (usage example) of a function closest to the turn."""

    text: str
    similarity: float = Field(description="cosine similarity of the new turn to the example")
    runs: int = Field(
        description="how many of the function's stored requests ask the same thing as the turn (cosine 0.6 or "
        "more on all-MiniLM-L6-v2's scale); from 3 on, the example counts at full weight instead of b"
    )


class SignalWeights(BaseModel):
    """How much each signal counted for this function."""

    dense: float = Field(description="the share of the semantic score (the cosine, or the usage example's)")
    lexical: float = Field(description="the share of the relative BM25 score (half for a vague turn's own words)")
    usage: float = Field(
        description="the weight of its closest usage example inside the semantic score: b, 1 once three of its "
        "stored requests ask the same thing as the turn, 0 without an example"
    )


class ScoreTerms(BaseModel):
    """The terms summed into a function's score: they add up to it."""

    dense: float = Field(description="(1 - a) x the cosine, when it beat the usage example")
    usage: float = Field(
        description="(1 - a) x b x the usage example's similarity, when it beat the cosine (b is 1 when three or "
        "more of the function's stored requests ask the same thing as the turn)"
    )
    lexical: float = Field(description="a x the BM25 score relative to the best candidate's")
    context: float = Field(description="the recent context's share, for a vague turn (0 otherwise)")
    unseen: float = Field(
        description="for a function only the recent context found: the turn's lowest score, standing in for its own"
    )
    companion: float = Field(
        0.0, description="for a companion: its anchor's score x how often stored runs call them together"
    )


class Explanation(BaseModel):
    """The parts of a function's score for this turn."""

    dense: float = Field(description="cosine similarity of the turn (or its part) to the function's text")
    lexical: float = Field(description="BM25 score relative to the best candidate's, 0..1")
    lexical_raw: float = Field(description="the BM25 score itself")
    example: ExampleMatch | None = Field(None, description="the usage example that matched, when one did")
    context_weight: float = Field(description="the weight the recent context had for this turn")
    recent: float | None = Field(None, description="the function's score for the recent-context query, when used")
    weights: SignalWeights
    score_new: float = Field(description="the function's score for its query alone, before the context")
    part: str | None = Field(None, description="the part of the turn the function was found for (null: the whole turn)")
    terms: ScoreTerms = Field(description="the terms summed into the score")
    companion_of: str | None = Field(
        None, description="the routed function stored runs call it with, when it came as that one's companion"
    )
    context_only: bool = Field(
        False,
        description="the turn was ranked by its recent context alone (it only changes the values of the request "
        "before it): dense, lexical and the terms are the context's",
    )


class RoutedFunction(BaseModel):
    """A function chosen for the turn."""

    name: str
    description: str
    score: float = Field(
        description="relevance to the turn, at most 1: cosine similarity blended with keyword (BM25) overlap"
    )
    parameters: dict[str, Any]
    pinned: bool = Field(False, description="included because it is pinned, not counted in max_functions")
    explanation: Explanation | None = Field(None, description="the parts of the score; only with `explain: true`")


class MemoryOut(BaseModel):
    """A memory relevant to the turn."""

    text: str
    score: float


class LeftOutOut(BaseModel):
    """A function the model API's documented limits left out of a tool list."""

    name: str
    reason: str = Field(description="the limit: a tool name the API refuses, or more tools than it takes")


class RouteOut(BaseModel):
    """The functions that matter for the turn, plus the session's context."""

    functions: list[RoutedFunction]
    tools: list[dict[str, Any]] = Field(
        description="the same functions as tool objects of `format` (Chat Completions or Anthropic), same order; "
        "with `defer_rest`, the whole catalog as the `tools` array of `format`"
    )
    history: list[dict[str, Any]] = Field(
        default_factory=list, description="the session's last messages, as chat messages (store fields removed)"
    )
    memories: list[MemoryOut] = Field(default_factory=list)
    memory_context: str = Field("", description="the memories as ready-to-use context text")
    context: str = Field(description="the text of the new turn that was embedded")
    recent_context: str = Field("", description="the recent messages plus the new turn, embedded as context")
    degraded: bool = Field(
        False,
        description="storage was unreachable and routes fail open: only the pinned functions, no history or memories",
    )
    left_out: list[LeftOutOut] = Field(
        default_factory=list,
        description="functions kept out of `tools` because the API would refuse them (see docs/api.md)",
    )
    below_min_score: int = Field(
        0,
        description="how many of the best `max_functions` functions scored below `min_score` and were left out "
        "(a route answers no routed function only when this says why)",
    )


class HealthOut(BaseModel):
    """Liveness or readiness."""

    status: str
    checks: dict[str, bool] = Field(default_factory=dict)
