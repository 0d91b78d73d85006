"""How a turn is routed, and what context comes back with it (``ROUTER_ROUTE_*``)."""

from __future__ import annotations

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class RouteSettings(BaseSettings):
    """How a turn is routed, and what context comes back with it."""

    model_config = SettingsConfigDict(env_prefix="ROUTER_ROUTE_", extra="forbid")

    max_functions: int = Field(3, ge=1, le=128, description="functions returned when a request does not say")
    recent_messages: int = Field(2, ge=0, le=100, description="earlier messages that add context to the new turn")
    roles: tuple[str, ...] = Field(("user",), min_length=1, description="roles whose messages count for routing")
    context_weight: float = Field(
        0.3, ge=0.0, le=1.0, description="weight of the recent context against a new turn that matches nothing well"
    )
    context_clear: float = Field(
        0.3, ge=-1.0, le=1.0, description="best similarity of the new turn from which the recent context stops counting"
    )
    context_vague: float = Field(
        0.2, ge=-1.0, le=1.0, description="best similarity of the new turn up to which the context counts fully"
    )
    candidates: int = Field(20, ge=1, le=1000, description="candidates searched per query vector before fusion")
    lexical_weight: float = Field(
        0.35,
        ge=0.0,
        le=1.0,
        description="largest share of the BM25 score (relative to the best) in a function's score; each request "
        "gets a part of it by how much its BM25 scores single a function out",
    )
    example_weight: float = Field(
        0.9, ge=0.0, le=1.0, description="how much similarity to a usage example counts against the function's own"
    )
    learn_from_usage: bool = Field(True, description="keep the requests behind stored tool calls as usage examples")
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

    @model_validator(mode="after")
    def _context_ramp(self) -> RouteSettings:
        if self.context_vague >= self.context_clear:
            raise ValueError(
                f"ROUTER_ROUTE_CONTEXT_VAGUE={self.context_vague} must be below "
                f"ROUTER_ROUTE_CONTEXT_CLEAR={self.context_clear}"
            )
        return self
