"""Typed answers of the usage-example endpoints: a page of a namespace's examples, a deletion."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from router.client._models import _float, _list, _object, _str


@dataclass(frozen=True)
class UsageExample:
    """A request that led to a successful call of ``function``, kept to route like requests to it.

    ``called_with``: the other functions its run called for the same turn (empty from a server
    that does not say).
    """

    id: str
    function: str
    request: str
    stored_at: float
    called_with: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, body: Any) -> UsageExample:
        """Read one ``examples`` item of ``GET /v1/catalogs/{namespace}/examples``."""
        item = _object(body, "example")
        beside = tuple(str(name) for name in _list(item.get("called_with", []), "called_with"))
        return cls(_str(item, "id"), _str(item, "function"), _str(item, "request"), _float(item, "stored_at"), beside)


@dataclass(frozen=True)
class UsageExamples:
    """A page of usage examples, oldest first; ``next_cursor`` asks for the next one (None on the last)."""

    namespace: str
    examples: tuple[UsageExample, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, body: Any) -> UsageExamples:
        """Read a ``GET /v1/catalogs/{namespace}/examples`` answer."""
        data = _object(body, "examples")
        following = data.get("next_cursor")
        if following is not None and not isinstance(following, str):
            raise TypeError(f"examples: next_cursor is {type(following).__name__}, not a string")
        items = tuple(UsageExample.from_json(e) for e in _list(data.get("examples"), "examples"))
        return cls(_str(data, "namespace"), items, following)


@dataclass(frozen=True)
class ExamplesDeleted:
    """What deleting usage examples removed."""

    namespace: str
    deleted: int

    @classmethod
    def from_json(cls, body: Any) -> ExamplesDeleted:
        """Read a ``DELETE /v1/catalogs/{namespace}/examples[/{id}]`` answer."""
        data = _object(body, "deleted")
        deleted = data.get("deleted")
        if not isinstance(deleted, int):
            raise TypeError("deleted: not an integer")
        return cls(_str(data, "namespace"), deleted)
