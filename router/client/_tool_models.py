"""Typed answers of the tool search endpoints, read from JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from router.client._models import _dicts, _float, _list, _object, _str

SearchFormat = Literal["openai", "anthropic", "mcp", "plain"]
ListFormat = Literal["openai", "anthropic"]


@dataclass(frozen=True)
class FoundFunction:
    """A function a search found.

    Attributes:
        name: the function's name.
        namespace: the catalog it belongs to.
        description: what it does.
        score: the route's score for the query (at most 1).
    """

    name: str
    namespace: str
    description: str
    score: float

    @classmethod
    def from_json(cls, body: Any) -> FoundFunction:
        """Read one ``functions`` item."""
        item = _object(body, "function")
        return cls(
            name=_str(item, "name"),
            namespace=_str(item, "namespace"),
            description=_str(item, "description", ""),
            score=_float(item, "score"),
        )


@dataclass(frozen=True)
class ToolSearchResult:
    """The answer to a model's search call.

    Attributes:
        item: what to hand back to the model's API unchanged: an OpenAI ``tool_search_output``
            input item, an Anthropic ``tool_result`` block, an MCP ``tools/list`` result or
            ``{"functions": [...]}``.
        functions: the functions found, best first.
    """

    item: dict[str, Any]
    functions: tuple[FoundFunction, ...]

    @property
    def names(self) -> list[str]:
        """The found functions' names, best first."""
        return [f.name for f in self.functions]

    @classmethod
    def from_json(cls, body: Any) -> ToolSearchResult:
        """Read a ``POST /v1/tool_search`` answer."""
        data = _object(body, "tool search")
        return cls(
            item=dict(_object(data.get("item"), "item")),
            functions=tuple(FoundFunction.from_json(f) for f in _list(data.get("functions"), "functions")),
        )


@dataclass(frozen=True)
class CatalogTools:
    """A catalog as one API's ``tools`` array: the search tool, the loaded functions, the rest deferred.

    Attributes:
        namespace: the catalog's namespace.
        format: ``openai`` (Responses API) or ``anthropic`` (Messages API).
        tools: the array to send as the request's ``tools``.
    """

    namespace: str
    format: str
    tools: tuple[dict[str, Any], ...]

    @classmethod
    def from_json(cls, body: Any) -> CatalogTools:
        """Read a ``GET /v1/catalogs/{namespace}/tools`` answer."""
        data = _object(body, "tools")
        return cls(
            namespace=_str(data, "namespace"), format=_str(data, "format"), tools=_dicts(data.get("tools"), "tools")
        )
