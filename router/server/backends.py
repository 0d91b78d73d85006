"""The backends a process opens from its settings: storage (the embedded engine or a Qdrant
server) and embedders (a local model or an embedding service).

The runtime opens them, and so do the commands that need one of them alone.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Protocol

from router.embedding import (
    Embedder,
    EmbedderPool,
    EmbeddingUnavailable,
    Endpoint,
    LocalEmbedder,
    RemoteEmbedder,
    is_remote,
)
from router.server.embedding_settings import EmbeddingSettings, MultilingualSettings
from router.server.settings import StorageSettings
from router.storage.base import Storage

if TYPE_CHECKING:
    from router.storage.client import ClientStorage


def open_storage(settings: StorageSettings) -> Storage:
    """Open the embedded data directory, or connect to the Qdrant server."""
    if settings.qdrant_url is not None:
        return open_server(settings)
    from router.storage.edge import EdgeStorage

    return EdgeStorage(settings.data_dir())


def open_server(settings: StorageSettings) -> ClientStorage:
    """Connect to the configured Qdrant server with its sharding, replication and consistency settings."""
    from router.storage.client import ClientStorage
    from router.storage.cluster import ClusterOptions

    if settings.qdrant_url is None:
        raise ValueError("no Qdrant URL is set (ROUTER_STORAGE_QDRANT_URL or --qdrant-url)")
    cluster = ClusterOptions(**settings.model_dump(include={f.name for f in fields(ClusterOptions)}))
    options = settings.model_dump(include={"api_key", "prefix", "timeout", "hnsw_ef"})
    return ClientStorage.from_url(settings.qdrant_url, cluster=cluster, **options)


class Loader(Protocol):
    """Builds the embedder of a model name; ``dimension``: that of its vectors the store holds, if any."""

    def __call__(self, model: str, dimension: int | None = None, /) -> Embedder: ...


def embedder_pool(settings: EmbeddingSettings, multilingual: MultilingualSettings | None = None) -> EmbedderPool:
    """The pool of a process: ``embedder_loader``'s embedders, told what the store records of each model."""
    load = embedder_loader(settings, multilingual)
    return EmbedderPool(load, load_recorded=load)


def embedder_loader(settings: EmbeddingSettings, multilingual: MultilingualSettings | None = None) -> Loader:
    """Builds embedders by model name: local ones with the configured device, batch size and threads,
    remote ones (a service's identity) with the configured key, timeout, retries and concurrency.

    The multilingual space's model is built with its own settings (``ROUTER_MULTILINGUAL_*``). A
    local model knows its dimension; a service is given the one the store records (``remote_embedder``).
    """

    def load(model: str, dimension: int | None = None, /) -> Embedder:
        own = multilingual if multilingual is not None and model == multilingual.identity else settings
        if is_remote(model):
            return remote_embedder(own, Endpoint.parse(model), recorded=dimension)
        return LocalEmbedder(model, **own.model_dump(include={"device", "batch_size", "threads", "lanes"}))

    return load


def remote_embedder(settings: EmbeddingSettings, endpoint: Endpoint, *, recorded: int | None = None) -> RemoteEmbedder:
    """An embedder of ``endpoint`` (the configured one, or the one an older generation names).

    The configured dimension holds for the configured endpoint only. Without one the service is
    asked, and while it cannot answer, ``recorded`` (that of the model's vectors in the store)
    stands in.

    Raises:
        EmbeddingUnavailable: the service cannot be asked its dimension, and none is configured or
            recorded; for the configured endpoint, the message names the setting that would do.
    """
    configured = endpoint == settings.endpoint()
    dimension = settings.dimensions if configured else endpoint.dimensions
    try:
        return RemoteEmbedder(
            endpoint,
            api_key=settings.key(),
            api_version=settings.api_version,
            dimension=dimension,
            recorded_dimension=recorded,
            **settings.model_dump(include={"batch_size", "concurrency", "timeout", "retries", "backoff"}),
        )
    except EmbeddingUnavailable as exc:
        if not configured:
            raise
        variable = f"{settings.model_config.get('env_prefix', '')}DIMENSIONS"
        raise type(exc)(
            f"{exc.detail}; the router asks it the dimension of its vectors at start, and the store holds "
            f"no vectors of this model to take it from: set {variable} to start without the service"
        ) from exc
