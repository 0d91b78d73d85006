"""What every embedding backend offers the router: documents, queries, a dimension and a name."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from router.embedding.batching import Vectors

Progress = Callable[[int, int], None]
# Told of every model call: its kind ("query", "catalog", ...), its number of texts and its seconds.
EncodeObserver = Callable[[str, int, float], None]
# Told of every request to a remote service: its kind, outcome ("ok", "retried", "failed"), texts and
# the tokens the service says it counted (0 when it does not say).
RequestObserver = Callable[[str, str, int, int], None]


class Embedder(ABC):
    """An embedding model: normalised float32 vectors for documents and queries.

    ``model_name`` identifies the vectors it makes: two embedders of one name make vectors that
    can be compared, so it names the generation (and the memories and usage examples) they fill.

    Attributes:
        model_name: what identifies the model and how texts are given to it.
        dimension: the length of its vectors.
        batch_size: texts per model call (per request) when embedding documents.
        observers: told of every model call (shared with the pool that loaded it).
        request_observers: told of every request to a remote service (shared likewise).
    """

    model_name: str
    dimension: int
    batch_size: int
    observers: list[EncodeObserver]
    request_observers: list[RequestObserver]

    async def check(self) -> str | None:
        """What keeps the model from embedding now, or None when it can (a local model always can)."""
        return None

    @abstractmethod
    async def embed(self, texts: Sequence[str], *, progress: Progress | None = None, kind: str = "catalog") -> Vectors:
        """Document vectors, off the event loop; ``kind`` names the texts (``catalog``, ``memory``, ``example``)."""

    @abstractmethod
    async def query(self, texts: Sequence[str]) -> Vectors:
        """Query vectors, through a cache and shared calls."""

    @abstractmethod
    def encode(self, texts: Sequence[str], *, progress: Progress | None = None, kind: str = "catalog") -> Vectors:
        """Document vectors on the calling thread (for scripts)."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """What the status shows of the model: at least ``provider``, ``model`` and ``dimension``."""

    @abstractmethod
    def close(self) -> None:
        """Release the model's threads and connections."""
