"""Embedding models: loading, backends, query micro-batching and the query cache.

- ``model``: ``Embedder`` (one model, encoded off the event loop) and ``EmbedderPool``.
- ``backends``: PyTorch fp32 and bf16-autocast runs of a loaded model.
- ``onnx_backend``: the same model run by ONNX Runtime, exported and checked once.
- ``selection``: which backend serves each shape of work, by measurement, cached per model and CPU.
- ``loading``: builds the runs a setting, a cached choice or a fresh measurement asks for.
- ``batching``: the query cache, the micro-batches concurrent routes share, length groups.
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
