"""A catalog ``PUT`` body split into the raw bytes of each definition, decoded only where needed.

A 100k-function catalog is 60 MB of JSON. Decoding, checking and parsing all of it takes seconds
when one definition changed; split into one raw slice per definition (a tenth of a second), the
slices the writer already holds are known by a digest of their bytes and never decoded.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

import msgspec
import orjson
import xxhash

from router import heap
from router.catalog import CatalogDocument, FunctionDef, parse_document, parse_function
from router.limits import LimitSettings, check_bulk, check_count, check_document

__all__ = ["CatalogBody", "split"]


class _Shape(msgspec.Struct, forbid_unknown_fields=True):
    functions: list[msgspec.Raw]
    pinned: list[str] = []


class CatalogBody:
    """A ``{"functions": [...], "pinned"?: [...]}`` body and the raw bytes of each definition.

    Args:
        body: the request body.
        parts: each definition's bytes, in body order.
        pinned: the ``pinned`` names as sent.
        source: how errors name the body, e.g. ``"PUT /v1/catalogs/travel"``.
    """

    def __init__(self, body: bytes, parts: list[msgspec.Raw], pinned: Sequence[str], source: str) -> None:
        self.body = body
        self.parts = parts
        self.pinned = tuple(dict.fromkeys(pinned))
        self._pinned = list(pinned)
        self.source = source

    def __len__(self) -> int:
        return len(self.parts)

    @cached_property
    def digests(self) -> list[bytes]:
        """A 128-bit digest of each definition's bytes, in body order.

        xxh3: ten times sha256's rate over 100k slices. A digest only tells apart bytes that one
        writer accepted and wrote itself; it guards no boundary between clients.
        """
        return [xxhash.xxh3_128_digest(part) for part in self.parts]

    def check(self, limits: LimitSettings) -> None:
        """Check what the split shows without decoding a definition: the count, and the pinned names.

        Raises:
            InvalidRequest: naming the field.
        """
        check_count("functions", len(self.parts), limits)
        check_document(self._pinned, limits, at=("pinned",))

    def document(self, limits: LimitSettings) -> CatalogDocument:
        """The whole body decoded, checked and parsed as one, exactly as an unsplit body is.

        Raises:
            InvalidRequest: a limit, naming the first field over it in body order.
            CatalogInvalid: the first bad definition, duplicate name or unknown pinned name.
        """
        with heap.bulk():
            decoded: Any = orjson.loads(self.body)
            check_bulk(decoded, self.body, limits)
            return parse_document(decoded, source=self.source, finite=True)

    def function(self, index: int, limits: LimitSettings) -> FunctionDef:
        """Definition ``index`` decoded, checked and parsed on its own.

        Raises:
            InvalidRequest, CatalogInvalid, orjson.JSONDecodeError: as ``document`` would for it.
        """
        decoded = orjson.loads(memoryview(self.parts[index]))
        check_document(decoded, limits, at=("functions", index))
        return parse_function(decoded, where=f"{self.source}: functions[{index}]", finite=True)


def split(body: bytes, source: str) -> CatalogBody | None:
    """``body`` split into its definitions' bytes; None for any other shape (decoded whole then)."""
    try:
        shape = msgspec.json.decode(body, type=_Shape)
    except msgspec.DecodeError:  # malformed, another shape, or unknown keys: the full decode names it
        return None
    return CatalogBody(body, shape.functions, shape.pinned, source)
