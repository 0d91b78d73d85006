"""Embedding models: loading, backends, query micro-batching and the query cache.

- ``model``: ``Embedder`` (one model, encoded off the event loop) and ``EmbedderPool``.
- ``onnx_backend``: the same model run by ONNX Runtime, exported and checked once.
- ``batching``: the query cache and the micro-batches concurrent routes share.
"""

from router.embedding.batching import QueryBatcher, Vectors
from router.embedding.model import (
    DEFAULT_MODEL,
    Backend,
    Embedder,
    EmbedderPool,
    EncodeObserver,
    Progress,
    default_cache_dir,
    resolve_model,
)

__all__ = [
    "DEFAULT_MODEL",
    "Backend",
    "Embedder",
    "EmbedderPool",
    "EncodeObserver",
    "Progress",
    "QueryBatcher",
    "Vectors",
    "default_cache_dir",
    "resolve_model",
]
