"""How a turn is routed, and what context comes back with it (``ROUTER_ROUTE_*``)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class RouteSettings(BaseSettings):
    """How a turn is routed, and what context comes back with it."""

    model_config = SettingsConfigDict(env_prefix="ROUTER_ROUTE_", extra="forbid", env_ignore_empty=True)

    max_functions: int = Field(3, ge=1, le=128, description="functions returned when a request does not say")
    recent_messages: int = Field(2, ge=0, le=100, description="earlier messages that add context to the new turn")
    roles: tuple[str, ...] = Field(("user",), min_length=1, description="roles whose messages count for routing")
    context_weight: float = Field(
        0.3, ge=0.0, le=1.0, description="weight of the recent context against a vague new turn"
    )
    context_vague: float = Field(
        0.3,
        ge=-1.0,
        le=1.0,
        description="a new turn whose best similarity (to a function or a usage example) is below this is vague: "
        "its recent context counts; an English part of a turn this vague takes no turn of its own unless it opens "
        "on an action",
    )
    candidates: int = Field(20, ge=1, le=1000, description="candidates searched per query vector before fusion")
    lexical_weight: float = Field(
        0.25, ge=0.0, le=1.0, description="share of the BM25 score (relative to the best) in a function's score"
    )
    example_weight: float = Field(
        0.9, ge=0.0, le=1.0, description="how much similarity to a usage example counts against the function's own"
    )
    learn_from_usage: bool = Field(True, description="keep the requests behind stored tool calls as usage examples")
    # Off until measured on the development sets (docs/scoring.md, "Companions").
    companions: bool = Field(
        False, description="add to a turn the functions stored runs usually call with the ones routed (companions)"
    )
    history_messages: int = Field(20, ge=0, le=1000, description="history messages returned with a route")
    max_memories: int = Field(
        3, ge=0, le=100, description="memories returned with a route, at most (past the memory budget)"
    )
    memory_standout: float = Field(
        0.65,
        ge=0.0,
        le=1.0,
        description="a memory comes back when it stands out among the user's memories at least this share as much "
        "as the best one",
    )
    memory_min_score: float = Field(
        0.12, ge=-1.0, le=1.0, description="least relevance for a memory to come back (a floor under the margin)"
    )
    memory_budget: int = Field(
        5, ge=0, le=100, description="a user with at most this many memories gets each one that is not unrelated back"
    )
    memory_budget_chars: int = Field(
        600, ge=0, le=100_000, description="... when they hold at most this many characters"
    )
    fail_open: bool = Field(False, description="storage down: answer routes with the pinned functions, not 503")
