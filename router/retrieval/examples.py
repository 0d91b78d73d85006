"""Usage examples: requests that led to a call of a function, embedded as queries.

Examples live in their own collection per embedding model (they are queries, so the function
text template does not matter to them), carry the content hash of the function version they
were recorded against, and are deleted with their function or when it changes.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from router.embedding import Vectors
from router.storage.base import Collection, CollectionSpec, PointData, Storage

__all__ = ["MAX_EXAMPLES", "Example", "ExampleStore"]

MAX_EXAMPLES = 32
_IDS = uuid.UUID("5d2e8f61-7a3c-4b9e-a1d4-0c6b8e2f9a73")


@dataclass(frozen=True)
class Example:
    """A request that led to a call of ``name``."""

    name: str
    text: str


class ExampleStore:
    """Usage examples of every namespace, embedded by one model."""

    def __init__(self, collection: Collection) -> None:
        self.collection = collection

    @classmethod
    def open(cls, storage: Storage, *, model: str, dimension: int) -> ExampleStore:
        """Open (creating when missing) the examples collection of ``model``."""
        key = hashlib.sha256(f"{model}|{dimension}".encode()).hexdigest()[:12]
        spec = CollectionSpec(
            name=f"examples-{key}",
            dense_size=dimension,
            tenant_field="namespace",
            keyword_fields=("name",),
            integer_fields=("seq",),
        )
        return cls(storage.collection(spec))

    def add(self, namespace: str, examples: Sequence[tuple[Example, str]], vectors: Vectors) -> None:
        """Keep examples with their function's content hash; the same request is kept once.

        A function keeps its ``MAX_EXAMPLES`` most recent examples.
        """
        seq = time.time_ns() // 1_000
        points = [
            PointData(
                id=str(uuid.uuid5(_IDS, f"{namespace}\x00{example.name}\x00{example.text}")),
                payload={
                    "namespace": namespace,
                    "name": example.name,
                    "text": example.text,
                    "hash": content_hash,
                    "seq": seq + i,
                },
                dense=vectors[i].tolist(),
            )
            for i, (example, content_hash) in enumerate(examples)
        ]
        self.collection.upsert(points)
        for name in {example.name for example, _ in examples}:
            match = {"namespace": namespace, "name": name}
            extra = self.collection.count(match) - MAX_EXAMPLES
            if extra > 0:
                oldest = [r.id for r in self.collection.scroll(match, order_by="seq")][:extra]
                self.collection.delete(oldest)

    def nearest(self, namespace: str, vector: Sequence[float], *, limit: int) -> dict[str, tuple[float, str]]:
        """The functions with an example near ``vector``: ``{name: (best similarity, function hash)}``."""
        hits = self.collection.search(dense=vector, match={"namespace": namespace}, limit=limit * 2)
        best: dict[str, tuple[float, str]] = {}
        for hit in hits:
            name = hit.payload["name"]
            if name not in best:
                best[name] = (hit.score, hit.payload["hash"])
        return dict(list(best.items())[:limit])

    def texts(self, namespace: str, name: str) -> list[str]:
        """The example requests of one function, oldest first."""
        records = self.collection.scroll({"namespace": namespace, "name": name}, order_by="seq")
        return [r.payload["text"] for r in records]

    def count(self, namespace: str | None = None) -> int:
        """How many examples are kept (in one namespace, or in all)."""
        return self.collection.count({"namespace": namespace} if namespace else None)

    def forget(self, namespace: str, names: Sequence[str]) -> None:
        """Delete every example of the named functions."""
        self.collection.delete_where({"namespace": namespace, "name": list(names)})
