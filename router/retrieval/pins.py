"""The pinned functions of each catalog, kept in memory for routes that cannot reach storage.

With ``ROUTER_ROUTE_FAIL_OPEN=true`` a route whose storage is down answers with its
namespace's pinned functions (the catalog's and the request's) instead of a 503, flagged
``degraded``. What is pinned must then be known without storage: this cache reads it once
at start, and learns from every catalog write and every successful route since.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from router.catalog.functions import FunctionDef
from router.catalog.records import CatalogRecord
from router.retrieval.index import FunctionStore

__all__ = ["KNOWN_PER_NAMESPACE", "PinnedFunctions", "read_pins"]

# Definitions kept per namespace beyond its catalog pins (functions requests pinned).
KNOWN_PER_NAMESPACE = 256


class PinnedFunctions:
    """Each namespace's catalog pins and the definitions of the functions pinned in it lately."""

    def __init__(self) -> None:
        self._pins: dict[str, tuple[str, ...]] = {}
        self._known: dict[str, dict[str, FunctionDef]] = {}

    def written(
        self, namespace: str, functions: Sequence[FunctionDef] | Mapping[str, FunctionDef], pinned: Sequence[str]
    ) -> None:
        """A catalog now holds exactly ``functions`` (a list, or by name): forget what it no longer has."""
        by_name = functions if isinstance(functions, Mapping) else {f.name: f for f in functions}
        known = {name: by_name[name] for name in self._known.get(namespace, {}) if name in by_name}
        known.update((name, by_name[name]) for name in pinned if name in by_name)
        self._pins[namespace] = tuple(pinned)
        self._known[namespace] = known

    def deleted(self, namespace: str) -> None:
        """A catalog is gone."""
        self._pins.pop(namespace, None)
        self._known.pop(namespace, None)

    def seen(self, namespace: str, pinned: Sequence[str], functions: Sequence[FunctionDef]) -> None:
        """A route read the catalog's pins and these pinned functions from storage."""
        self._pins[namespace] = tuple(pinned)
        known = self._known.setdefault(namespace, {})
        for function in functions:
            known.pop(function.name, None)
            known[function.name] = function
        if len(known) > KNOWN_PER_NAMESPACE:
            keep = set(pinned)
            for name in [n for n in known if n not in keep][: len(known) - KNOWN_PER_NAMESPACE]:
                del known[name]

    def answer(self, namespace: str, requested: Sequence[str]) -> list[FunctionDef] | None:
        """The pinned functions known for a route, or None when the namespace is not known here."""
        if namespace not in self._pins:
            return None
        known = self._known.get(namespace, {})
        names = dict.fromkeys([*self._pins[namespace], *requested])
        return [known[name] for name in names if name in known]


async def read_pins(catalogs: Mapping[str, CatalogRecord], store: FunctionStore) -> PinnedFunctions:
    """Every catalog's pins and pinned functions, read from storage."""
    pins = PinnedFunctions()
    for namespace, record in catalogs.items():
        functions = await asyncio.to_thread(store.get, namespace, record.pinned) if record.pinned else []
        pins.seen(namespace, record.pinned, functions)
    return pins
