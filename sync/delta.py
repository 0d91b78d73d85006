"""A catalog body told apart from the one last written by the bytes of each definition."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import orjson

from router.catalog import FunctionDef
from router.catalog_body import CatalogBody
from router.errors import RouterError
from router.limits import LimitSettings

__all__ = ["FRESH_MOST", "FRESH_SHARE", "Delta", "resolve"]

# Past this many definitions with new bytes (or an eighth of the catalog, when more), the body is
# decoded whole: one decode and one byte scan beat as many small ones.
FRESH_MOST = 64
FRESH_SHARE = 8


class Delta:
    """A catalog body whose definitions are named by the record of the last write, but for the fresh ones.

    Attributes:
        body: the split body.
        names: each definition's name, in body order.
        fresh: the definitions whose bytes were not written last, decoded, by their index.
        basis: the record of the last write (``{digest: name}``) the names come from.
        limits: what each decoded definition was checked against.
    """

    def __init__(
        self,
        body: CatalogBody,
        names: list[str],
        fresh: dict[int, FunctionDef],
        basis: Mapping[bytes, str],
        limits: LimitSettings,
    ) -> None:
        self.body = body
        self.names = names
        self.fresh = fresh
        self.basis = basis
        self.limits = limits

    def __len__(self) -> int:
        return len(self.names)

    @property
    def pinned(self) -> tuple[str, ...]:
        """The names always returned with a route."""
        return self.body.pinned

    @property
    def digests(self) -> list[bytes]:
        """Each definition's digest, in body order."""
        return self.body.digests

    def by_name(self) -> Mapping[str, FunctionDef]:
        """Every definition by name; one whose bytes were written before is decoded when read."""
        return _Functions(self)


class _Functions(Mapping[str, FunctionDef]):
    def __init__(self, delta: Delta) -> None:
        self._delta = delta
        self._index = {name: i for i, name in enumerate(delta.names)}

    def __getitem__(self, name: str) -> FunctionDef:
        index = self._index[name]
        fresh = self._delta.fresh.get(index)
        return fresh if fresh is not None else self._delta.body.function(index, self._delta.limits)

    def __contains__(self, name: object) -> bool:
        return name in self._index  # Mapping's own reads the item, which decodes it

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


def resolve(body: CatalogBody, basis: Mapping[bytes, str], limits: LimitSettings) -> Delta | None:
    """``body`` against the record of the last write, or None when it must be decoded whole.

    None when many definitions are fresh (``FRESH_MOST``), or when anything is wrong: a fresh
    definition that fails, a name twice, an unknown pinned name. The whole decode then names the
    first error as it would for any body.
    """
    digests = body.digests
    names: list[str | None] = [basis.get(digest) for digest in digests]
    fresh_at = [i for i, name in enumerate(names) if name is None]
    if len(fresh_at) > max(FRESH_MOST, len(names) // FRESH_SHARE):
        return None
    fresh: dict[int, FunctionDef] = {}
    for index in fresh_at:
        try:
            function = body.function(index, limits)
        except (RouterError, orjson.JSONDecodeError):
            return None
        fresh[index] = function
        names[index] = function.name
    named = [name for name in names if name is not None]
    unique = set(named)
    if len(unique) != len(named) or not unique.issuperset(body.pinned):
        return None
    return Delta(body, named, fresh, basis, limits)
