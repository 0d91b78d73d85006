"""Embedding models: loading, query micro-batching on lanes and the query cache.

- ``model``: ``Embedder`` (one model, encoded off the event loop) and ``EmbedderPool``.
- ``batching``: the query cache and the micro-batches concurrent routes share.
"""

from router.embedding.batching import QueryBatcher, Vectors
from router.embedding.model import DEFAULT_MODEL, Embedder, EmbedderPool, EncodeObserver, Progress, resolve_model

__all__ = [
    "DEFAULT_MODEL",
    "Embedder",
    "EmbedderPool",
    "EncodeObserver",
    "Progress",
    "QueryBatcher",
    "Vectors",
    "resolve_model",
]
