"""``ROUTER_MULTILINGUAL_*``: the second space's model, read as the embedding model's settings are."""

from __future__ import annotations

from typing import Any, cast

import pytest
from pydantic import ValidationError

from router.embedding import DEFAULT_MODEL, Endpoint
from router.retrieval.texts import DEFAULT_TEMPLATE
from router.server.embedding_settings import MultilingualSettings
from sync.service import CatalogService

URL = "http://127.0.0.1:8090/v1"


def test_no_second_space_unless_a_model_is_set() -> None:
    assert not MultilingualSettings().enabled
    assert MultilingualSettings().identity == ""


def test_a_service_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTER_MULTILINGUAL_URL", URL)
    monkeypatch.setenv("ROUTER_MULTILINGUAL_MODEL", "multilingual-e5-small-q4")
    monkeypatch.setenv("ROUTER_MULTILINGUAL_QUERY_INPUT_TYPE", "query")
    monkeypatch.setenv("ROUTER_MULTILINGUAL_DOCUMENT_INPUT_TYPE", "passage")
    monkeypatch.setenv("ROUTER_MULTILINGUAL_API_KEY", "s3cret")
    settings = MultilingualSettings()
    endpoint = Endpoint.parse(settings.identity)
    assert (endpoint.url, endpoint.model, endpoint.query_input_type) == (URL, "multilingual-e5-small-q4", "query")
    assert settings.key() == "s3cret"
    assert "s3cret" not in settings.identity


def test_options_of_a_service_need_its_url() -> None:
    with pytest.raises(ValidationError, match="only applies to an embedding service"):
        MultilingualSettings(model="multilingual-e5-small-q4", query_input_type="query")


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"text": "raw"}, "ROUTER_MULTILINGUAL_TEXT='raw' is unknown"),
        ({"query_input_type": "query"}, "ROUTER_MULTILINGUAL_QUERY_INPUT_TYPE only applies"),
        ({"url": URL, "provider": "azure"}, "ROUTER_MULTILINGUAL_PROVIDER=azure needs ROUTER_MULTILINGUAL_API_VERSION"),
    ],
)
def test_errors_name_the_variables_of_the_second_space(given: dict[str, str], named: str) -> None:
    with pytest.raises(ValidationError, match=named) as raised:
        MultilingualSettings(model="multilingual-e5-small-q4", **given)
    assert "ROUTER_EMBEDDING_" not in str(raised.value)


def test_a_catalog_service_with_a_multilingual_space_needs_that_model_s_same_request_cosine() -> None:
    nothing = cast(Any, None)  # the check comes before storage or a model is touched
    space = {"model": DEFAULT_MODEL, "text": DEFAULT_TEMPLATE, "multilingual": "multilingual-e5-small-q4"}
    with pytest.raises(ValueError, match="multilingual_same_request"):
        CatalogService(nothing, nothing, **space)
    with pytest.raises(ValueError, match="is the default model"):
        CatalogService(nothing, nothing, **{**space, "multilingual": DEFAULT_MODEL}, multilingual_same_request=0.9)
