"""The shared storage tests against a real Qdrant server started in Docker.

The whole module skips when no Docker engine answers.
"""

from __future__ import annotations

import gc
import uuid
import warnings
from collections.abc import Iterator

import docker
import pytest
from docker.errors import DockerException
from qdrant_client import models
from requests import RequestException
from testcontainers.community.qdrant import QdrantContainer

from router.storage.base import Storage
from router.storage.client import ClientStorage
from tests.integration import test_storage as shared

pytestmark = pytest.mark.server

# Within one minor version of qdrant-client (1.20), as qdrant-client requires.
QDRANT_IMAGE = "qdrant/qdrant:v1.19.1"


def docker_unreachable() -> str | None:
    """Why no Docker engine can be used, or None when one answers a ping."""
    with warnings.catch_warnings():
        # docker-py leaves its probe socket open when the daemon is missing.
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            client = docker.from_env(timeout=3)
            try:
                client.ping()
            finally:
                client.close()
        except (DockerException, RequestException) as exc:
            return str(exc) or type(exc).__name__
        finally:
            gc.collect()
    return None


_REASON = docker_unreachable()
if _REASON is not None:
    pytest.skip(f"no Docker engine reachable ({_REASON}): server tests need one", allow_module_level=True)


@pytest.fixture(scope="module")
def qdrant_url() -> Iterator[str]:
    with QdrantContainer(image=QDRANT_IMAGE) as container:
        yield f"http://{container.get_container_host_ip()}:{container.exposed_rest_port}"


@pytest.fixture
def backend(qdrant_url: str) -> Iterator[tuple[Storage, shared.Reopen]]:
    prefix = f"test_{uuid.uuid4().hex[:8]}_"
    current = [ClientStorage.from_url(qdrant_url, prefix=prefix)]

    def reopen(old: Storage) -> Storage:
        old.close()
        current[0] = ClientStorage.from_url(qdrant_url, prefix=prefix)
        return current[0]

    yield current[0], reopen
    current[0].close()


@pytest.fixture
def storage(backend: tuple[Storage, shared.Reopen]) -> Storage:
    return backend[0]


@pytest.fixture
def reopen(backend: tuple[Storage, shared.Reopen]) -> shared.Reopen:
    return backend[1]


test_open_is_idempotent = shared.test_open_is_idempotent
test_upsert_then_retrieve_round_trips_payload = shared.test_upsert_then_retrieve_round_trips_payload
test_upsert_replaces_point_with_same_id = shared.test_upsert_replaces_point_with_same_id
test_delete_by_ids_ignores_unknown = shared.test_delete_by_ids_ignores_unknown
test_delete_where_removes_only_matching = shared.test_delete_where_removes_only_matching
test_scroll_filters_by_value_and_any_of_list = shared.test_scroll_filters_by_value_and_any_of_list
test_scroll_orders_by_integer_field = shared.test_scroll_orders_by_integer_field
test_scroll_pages_through_many_points = shared.test_scroll_pages_through_many_points
test_count_with_and_without_match = shared.test_count_with_and_without_match
test_dense_search_ranks_nearest_first = shared.test_dense_search_ranks_nearest_first
test_dense_search_respects_match = shared.test_dense_search_respects_match
test_sparse_only_search = shared.test_sparse_only_search
test_hybrid_search_ranks_point_matching_both_first = shared.test_hybrid_search_ranks_point_matching_both_first
test_search_batch_answers_each_query = shared.test_search_batch_answers_each_query
test_payload_only_collection = shared.test_payload_only_collection
test_drop_removes_collection = shared.test_drop_removes_collection
test_reopened_storage_keeps_points = shared.test_reopened_storage_keeps_points


def test_server_creates_payload_indexes(storage: Storage) -> None:
    assert isinstance(storage, ClientStorage)
    spec = shared.make_spec()
    storage.collection(spec)

    names = [c.name for c in storage.client.get_collections().collections]
    (name,) = [n for n in names if n.endswith(spec.name)]
    indexes = storage.client.get_collection(name).payload_schema

    assert indexes["namespace"].data_type == models.PayloadSchemaType.KEYWORD
    assert isinstance(indexes["namespace"].params, models.KeywordIndexParams)
    assert indexes["namespace"].params.is_tenant is True
    assert indexes["kind"].data_type == models.PayloadSchemaType.KEYWORD
    assert indexes["seq"].data_type == models.PayloadSchemaType.INTEGER
