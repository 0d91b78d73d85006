"""An embedding service's settings and identity: what names its vectors, what is refused at start-up."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from router.catalog.records import Generation
from router.embedding import DEFAULT_MODEL, Endpoint, is_remote
from router.server.embedding_settings import EmbeddingSettings
from router.server.settings import problems

URL = "http://127.0.0.1:8090/v1"


def test_a_url_makes_the_model_remote_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTER_EMBEDDING_URL", URL)
    monkeypatch.setenv("ROUTER_EMBEDDING_MODEL", "multilingual-e5-small-q4")
    monkeypatch.setenv("ROUTER_EMBEDDING_API_KEY", "sk-secret")
    monkeypatch.setenv("ROUTER_EMBEDDING_QUERY_PREFIX", "query: ")
    monkeypatch.setenv("ROUTER_EMBEDDING_DOCUMENT_PREFIX", "passage: ")

    settings = EmbeddingSettings()

    assert settings.remote
    assert settings.key() == "sk-secret"
    assert "sk-secret" not in repr(settings)
    assert "sk-secret" not in str(settings.model_dump())
    endpoint = settings.endpoint()
    assert endpoint == Endpoint("openai", URL, "multilingual-e5-small-q4", "query: ", "passage: ")
    assert settings.identity == endpoint.identity
    assert is_remote(settings.identity)
    assert not is_remote(DEFAULT_MODEL)
    assert not is_remote("nomic:latest")


def test_the_key_can_come_from_a_file(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text("sk-from-file\n")
    settings = EmbeddingSettings(url=URL, model="m", api_key_file=key)
    assert settings.key() == "sk-from-file"


def test_identities_read_back_and_tell_every_vector_changing_option_apart() -> None:
    endpoints = [
        Endpoint("openai", URL, "e5"),
        Endpoint("openai", URL + "/", "e5", query_prefix="query: ", document_prefix="passage: "),
        Endpoint("openai", URL, "e5", query_prefix="query: "),
        Endpoint("openai", URL, "e5", query_input_type="query", document_input_type="passage"),
        Endpoint("openai", "http://127.0.0.1:11434/v1", "e5"),
        Endpoint("openai", URL, "e5-large"),
        Endpoint("azure", URL, "e5"),
        Endpoint("openai", URL, "text-embedding-3-small", dimensions=256),
        Endpoint("openai", URL, "nomic-embed-text:latest", query_prefix="search_query: ?&=%"),
    ]
    identities = [e.identity for e in endpoints]
    assert len(set(identities)) == len(endpoints)
    assert [Endpoint.parse(i).identity for i in identities] == identities
    assert Endpoint.parse(identities[1]) == Endpoint(
        "openai", URL, "e5", query_prefix="query: ", document_prefix="passage: "
    )
    generations = {Generation(i, "name_description", 384).id for i in [*identities, DEFAULT_MODEL]}
    assert len(generations) == len(endpoints) + 1


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"url": URL}, "set ROUTER_EMBEDDING_MODEL"),
        ({"provider": "openai", "model": "m"}, "needs the service's ROUTER_EMBEDDING_URL"),
        ({"provider": "local", "url": URL, "model": "m"}, "does not use ROUTER_EMBEDDING_URL"),
        ({"provider": "azure", "url": URL, "model": "m"}, "needs ROUTER_EMBEDDING_API_VERSION"),
        ({"query_prefix": "query: "}, "ROUTER_EMBEDDING_QUERY_PREFIX only applies to an embedding service"),
        ({"url": "ftp://x/v1", "model": "m"}, "must be http"),
        ({"url": URL + "?a=1", "model": "m"}, "without a query"),
        ({"url": URL, "model": "m", "request_dimensions": True}, "needs ROUTER_EMBEDDING_DIMENSIONS"),
        ({"url": URL, "model": "m", "api_key": "a", "api_key_file": "/etc/hostname"}, "keep one"),
        ({"url": URL, "model": "m", "api_key_file": "/nonexistent/key"}, "not a readable file"),
        ({"url": URL, "model": "m", "concurrency": 0}, "concurrency"),
        ({"timeout": 5}, "ROUTER_EMBEDDING_TIMEOUT only applies to an embedding service"),
        ({"url": "https://user:sk-secret@example.com/v1", "model": "m"}, "holds credentials"),
        (
            {"url": URL, "model": "m", "query_prefix": "query: ", "query_input_type": "query"},
            "set ROUTER_EMBEDDING_QUERY_PREFIX or ROUTER_EMBEDDING_QUERY_INPUT_TYPE, not both",
        ),
    ],
)
def test_conflicting_or_missing_options_are_refused_with_what_to_change(
    options: dict[str, object], problem: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        EmbeddingSettings(**options)
    assert problem in problems(refused.value) or problem in str(refused.value)
