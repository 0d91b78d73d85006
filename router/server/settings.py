"""Settings of one process, one class per concern, read from ``ROUTER_*`` environment variables.

Command-line flags override them; conflicting options are rejected at start-up. The classes
of the core's concerns live with them (``RouteSettings``, ``LimitSettings``, ``AuthSettings``),
the embedding ones in ``router.server.embedding_settings``; all are gathered here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from router.api.keys import AuthSettings
from router.catalog.limits import LimitSettings
from router.routing.settings import RouteSettings
from router.server.embedding_settings import EmbeddingSettings, MultilingualSettings
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
    timeout: float = Field(
        10.0, gt=0, le=86_400, allow_inf_nan=False, description="seconds a request to the Qdrant server may take"
    )
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
        url = self.qdrant_url or ""
        if "://" in url and not url.startswith(("http://", "https://")):  # ":memory:" is the client's own store
            raise ValueError(f"ROUTER_STORAGE_QDRANT_URL={url!r}: Qdrant is reached over http:// or https://")
        if isinstance(self.read_consistency, int) and self.read_consistency < 1:
            raise ValueError(f"ROUTER_STORAGE_READ_CONSISTENCY={self.read_consistency} must be at least 1")
        # Said first: the advice on the factors below would lead to a second refusal in embedded mode.
        given = self._cluster_settings()
        if self.qdrant_url is None and given:
            verb, them = ("applies", "it") if len(given) == 1 else ("apply", "them")
            raise ValueError(
                f"{', '.join(given)} only {verb} to a Qdrant server; "
                f"set ROUTER_STORAGE_QDRANT_URL (--qdrant-url) or remove {them}"
            )
        factor, replicas = self.write_consistency_factor, self.replication_factor or 1
        if factor is not None and factor > replicas:
            raise ValueError(
                f"ROUTER_STORAGE_WRITE_CONSISTENCY_FACTOR={factor} exceeds the replication factor {replicas}; "
                "set ROUTER_STORAGE_REPLICATION_FACTOR to at least as much"
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

    model_config = SettingsConfigDict(env_prefix="ROUTER_SYNC_", extra="forbid", env_ignore_empty=True)

    catalog: Path | None = Field(None, description="catalog directory to keep in sync")
    allow_delete: bool = Field(False, description="let an emptied or removed file delete its namespace")
    debounce_ms: int = Field(200, ge=0, le=10_000)
    follow_seconds: float = Field(5.0, gt=0, description="server mode: how often to check the active generation")
    retry_seconds: float = Field(
        1.0, gt=0, description="how soon a failed pass (storage unreachable) is tried again; doubles up to 10 s"
    )


class ServerSettings(BaseSettings):
    """The HTTP server and logging."""

    model_config = SettingsConfigDict(env_prefix="ROUTER_", extra="ignore", env_ignore_empty=True)

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["json", "text"] = "json"


def problems(exc: ValidationError | SettingsError, *, flags: Mapping[str, str] | None = None) -> str:
    """What is wrong with the settings, in one line, naming each variable at fault.

    ``flags`` names the command-line flag that set a variable, named in its place (in the
    messages of checks across fields too: "ROUTER_STORAGE_QDRANT_URL='ftp://x': ...").
    """
    flags = flags or {}
    if isinstance(exc, SettingsError):  # a variable that holds JSON could not be parsed
        field = re.search(r'field "(\w+)"', str(exc))
        owner = next((c for c in _CLASSES if field and field[1] in c.model_fields), None)
        return f"{variable(owner, field[1])} is not valid JSON" if owner and field else str(exc)
    model = next((c for c in _CLASSES if c.__name__ == exc.title), None)
    said: dict[str, list[str]] = {}
    for error in exc.errors():
        loc, message = error["loc"], str(error["msg"]).removeprefix("Value error, ")
        for set_by, flag in flags.items():
            message = re.sub(rf"\b{set_by}\b", flag, message)
        name = variable(model, loc[0]) if model and loc and isinstance(loc[0], str) else ""
        said.setdefault(flags.get(name, name), []).append(message)
    return "; ".join(f"{name}: {' or '.join(m)}" if name else "; ".join(m) for name, m in said.items())


def variable(model: type[BaseSettings], field: str) -> str:
    """The environment variable of ``model``'s ``field``."""
    info = model.model_fields.get(field)
    alias = info.validation_alias if info is not None else None
    if isinstance(alias, AliasChoices) and isinstance(alias.choices[0], str):
        alias = alias.choices[0]
    if isinstance(alias, str):
        return alias.upper()
    return f"{model.model_config.get('env_prefix', '')}{field}".upper()


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


_CLASSES: tuple[type[BaseSettings], ...] = (
    AuthSettings,
    EmbeddingSettings,
    LimitSettings,
    MultilingualSettings,
    RouteSettings,
    ServerSettings,
    StorageSettings,
    SyncSettings,
)
