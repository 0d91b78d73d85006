"""Embedding models: loading, query micro-batching on lanes and the query cache."""

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
