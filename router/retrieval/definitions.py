"""Parsed function definitions, kept for the functions routes return most.

A search returns each hit's name and content hash only; the definitions of the functions a
route returns come from this bounded cache, and only the missing ones are read from storage,
by id.
Keyed by content hash, an entry can never be stale: a changed function has a new hash,
and the old entry just ages out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

from router.catalog import FunctionDef, function_from_payload, point_id
from router.storage.base import Record

__all__ = ["DEFINITION_FIELDS", "HIT_FIELDS", "DefinitionCache"]

# The payload a search needs to name a function and tell its version.
HIT_FIELDS = ("name", "hash")
DEFINITION_FIELDS = ("name", "hash", "definition")
# About 3 KB each once parsed: a few MB, whatever the catalog's size.
_SIZE = 2048

Fetch = Callable[[Sequence[str]], list[Record]]


class DefinitionCache:
    """Parsed definitions by namespace, name and content hash, least recently used out first.

    Args:
        size: most definitions kept.
    """

    def __init__(self, size: int = _SIZE) -> None:
        self._size = size
        self._entries: OrderedDict[tuple[str, str, str], FunctionDef] = OrderedDict()
        # Routes search from several threads at once.
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def resolve(self, namespace: str, hashes: Mapping[str, str], fetch: Fetch) -> dict[str, FunctionDef]:
        """The definitions of the functions named in ``hashes`` (name to content hash).

        Misses are read with ``fetch`` (point ids to records with ``DEFINITION_FIELDS``).
        A function gone from storage since the search is left out; one whose stored
        version differs from the hash searched is returned as stored.
        """
        found: dict[str, FunctionDef] = {}
        with self._lock:
            for name, digest in hashes.items():
                hit = self._entries.get((namespace, name, digest))
                if hit is not None:
                    self._entries.move_to_end((namespace, name, digest))
                    found[name] = hit
        missing = [name for name in hashes if name not in found]
        if not missing:
            return found
        records = fetch([point_id(namespace, n) for n in missing])
        fetched = [(str(r.payload["hash"]), function_from_payload(r.payload)) for r in records]
        with self._lock:
            for digest, function in fetched:
                found[function.name] = function
                self._entries[(namespace, function.name, digest)] = function
                self._entries.move_to_end((namespace, function.name, digest))
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return found
