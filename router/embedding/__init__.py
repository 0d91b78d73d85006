"""Embedding models: loading, query micro-batching on lanes and the query cache."""

from router.embedding.base import Embedder, EncodeObserver, Progress, RequestObserver
from router.embedding.batching import QueryBatcher, Vectors
from router.embedding.model import DEFAULT_MODEL, EmbedderPool, LocalEmbedder, resolve_model

__all__ = [
    "DEFAULT_MODEL",
    "Embedder",
    "EmbedderPool",
    "EncodeObserver",
    "LocalEmbedder",
    "Progress",
    "QueryBatcher",
    "RequestObserver",
    "Vectors",
    "resolve_model",
]
