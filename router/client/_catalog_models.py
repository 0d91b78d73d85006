"""Typed answers of the catalog endpoints (catalogs, their tools arrays, searches), read from JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from router.client._models import _dicts, _float, _int, _list, _object, _str

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
        left_out: ``{"name", "reason"}`` of functions found but kept out of ``item`` (names the API refuses).
    """

    item: dict[str, Any]
    functions: tuple[FoundFunction, ...]
    left_out: tuple[dict[str, Any], ...] = ()

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
            left_out=_dicts(data.get("left_out", []), "left_out"),
        )


@dataclass(frozen=True)
class CatalogTools:
    """A catalog as one API's ``tools`` array: the search tool, the loaded functions, the rest deferred.

    Attributes:
        namespace: the catalog's namespace.
        format: ``openai`` (Responses API) or ``anthropic`` (Messages API).
        tools: the array to send as the request's ``tools``.
        left_out: ``{"name", "reason"}`` of functions the API's documented limits kept out of ``tools``.
    """

    namespace: str
    format: str
    tools: tuple[dict[str, Any], ...]
    left_out: tuple[dict[str, Any], ...] = ()

    @classmethod
    def from_json(cls, body: Any) -> CatalogTools:
        """Read a ``GET /v1/catalogs/{namespace}/tools`` answer."""
        data = _object(body, "tools")
        return cls(
            namespace=_str(data, "namespace"),
            format=_str(data, "format"),
            tools=_dicts(data.get("tools"), "tools"),
            left_out=_dicts(data.get("left_out", []), "left_out"),
        )


@dataclass(frozen=True)
class CatalogChanges:
    """What a catalog write changed, in functions."""

    namespace: str
    added: int
    updated: int
    removed: int
    unchanged: int

    @classmethod
    def from_json(cls, body: Any) -> CatalogChanges:
        """Read a ``PUT`` or ``DELETE /v1/catalogs/{namespace}`` answer."""
        data = _object(body, "changes")
        counts = {k: _int(data, k) for k in ("added", "updated", "removed", "unchanged")}
        return cls(namespace=_str(data, "namespace"), **counts)


@dataclass(frozen=True)
class CatalogInfo:
    """A known catalog.

    Attributes:
        namespace: the catalog's namespace.
        source: ``api``, or ``dir:<path>`` for a catalog directory.
        count: how many functions it holds.
        updated_at: Unix time of its last change.
        pinned: names always returned with a route.
    """

    namespace: str
    source: str
    count: int
    updated_at: float
    pinned: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, body: Any) -> CatalogInfo:
        """Read one ``catalogs`` item."""
        data = _object(body, "catalog")
        return cls(**_info_fields(data))


@dataclass(frozen=True)
class Catalog(CatalogInfo):
    """A catalog with its function definitions, as registered."""

    functions: tuple[dict[str, Any], ...] = ()

    @property
    def names(self) -> list[str]:
        """The functions' names, whatever shape each definition has."""
        names: list[str] = []
        for definition in self.functions:
            inner = definition.get("function")
            name = inner.get("name") if isinstance(inner, Mapping) else definition.get("name")
            if isinstance(name, str):
                names.append(name)
        return names

    @classmethod
    def from_json(cls, body: Any) -> Catalog:
        """Read a ``GET /v1/catalogs/{namespace}`` answer."""
        data = _object(body, "catalog")
        return cls(**_info_fields(data), functions=_dicts(data.get("functions", []), "functions"))


def _info_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    pinned = _list(data.get("pinned", []), "pinned")
    return {
        "namespace": _str(data, "namespace"),
        "source": _str(data, "source", ""),
        "count": _int(data, "count"),
        "updated_at": _float(data, "updated_at"),
        "pinned": tuple(str(p) for p in pinned),
    }


def catalogs_from_json(body: Any) -> list[CatalogInfo]:
    """Read a ``GET /v1/catalogs`` answer."""
    return [CatalogInfo.from_json(c) for c in _list(_object(body, "catalogs").get("catalogs"), "catalogs")]
