"""Embedding models: local or a remote service, query micro-batching on lanes and the query cache."""

from router.embedding.base import Embedder, EncodeObserver, Progress, RequestObserver
from router.embedding.batching import QueryBatcher, Vectors
from router.embedding.endpoint import EmbeddingInvalid, EmbeddingUnavailable, Endpoint, is_remote
from router.embedding.model import (
    DEFAULT_MODEL,
    EmbedderPool,
    LocalEmbedder,
    ModelNotFound,
    missing_model,
    resolve_model,
)
from router.embedding.remote import RemoteEmbedder

__all__ = [
    "DEFAULT_MODEL",
    "Embedder",
    "EmbedderPool",
    "EmbeddingInvalid",
    "EmbeddingUnavailable",
    "EncodeObserver",
    "Endpoint",
    "LocalEmbedder",
    "ModelNotFound",
    "Progress",
    "QueryBatcher",
    "RemoteEmbedder",
    "RequestObserver",
    "Vectors",
    "is_remote",
    "missing_model",
    "resolve_model",
]
