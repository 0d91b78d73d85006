"""The shared storage tests against a real Qdrant server started in Docker.

They run twice: with the server's defaults, and with the cluster options set (several shards,
ordered writes, reads that must agree), which a single node accepts as a cluster would.
"""

from __future__ import annotations

import pytest
from qdrant_client import models

from router.catalog.records import META
from router.storage.base import Storage
from router.storage.client_schema import create_collection
from router.storage.cluster import ClusterOptions
from tests.integration import test_storage as shared
from tests.server.engine import needs_docker
from tests.server.servers import Connect, Server

pytestmark = [pytest.mark.server, needs_docker]

CLUSTER = ClusterOptions(shard_number=3, write_ordering="medium", read_consistency="majority")


@pytest.fixture(params=["defaults", "cluster options"])
def backend(request: pytest.FixtureRequest, connect: Connect) -> tuple[Storage, shared.Reopen]:
    options = CLUSTER if request.param == "cluster options" else None

    def reopen(old: Storage) -> Storage:
        old.close()
        return connect(cluster=options)

    return connect(cluster=options), reopen


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
test_scroll_can_return_only_some_payload_fields = shared.test_scroll_can_return_only_some_payload_fields
test_count_with_and_without_match = shared.test_count_with_and_without_match
test_dense_search_ranks_nearest_first = shared.test_dense_search_ranks_nearest_first
test_dense_search_respects_match = shared.test_dense_search_respects_match
test_sparse_only_search = shared.test_sparse_only_search
test_a_search_given_both_vectors_ranks_by_the_dense_one = shared.test_a_search_given_both_vectors_ranks_by_the_dense_one
test_searches_answer_each_request_in_one_call = shared.test_searches_answer_each_request_in_one_call
test_payload_fields_limit_search_and_retrieve = shared.test_payload_fields_limit_search_and_retrieve
test_payload_only_collection = shared.test_payload_only_collection
test_drop_removes_collection = shared.test_drop_removes_collection
test_reopened_storage_keeps_points = shared.test_reopened_storage_keeps_points


def test_server_creates_payload_indexes(server: Server) -> None:
    storage = server.open()
    spec = shared.make_spec()
    storage.collection(spec)

    indexes = storage.client.get_collection(server.prefix + spec.name).payload_schema

    assert indexes["namespace"].data_type == models.PayloadSchemaType.KEYWORD
    assert isinstance(indexes["namespace"].params, models.KeywordIndexParams)
    assert indexes["namespace"].params.is_tenant is True
    assert indexes["kind"].data_type == models.PayloadSchemaType.KEYWORD
    assert indexes["seq"].data_type == models.PayloadSchemaType.INTEGER


def test_collections_are_created_with_the_configured_shards(server: Server) -> None:
    storage = server.open(cluster=ClusterOptions(shard_number=3, replication_factor=1, write_consistency_factor=1))
    spec = shared.make_spec()
    storage.collection(spec)
    storage.collection(META)

    sharded = storage.client.get_collection(server.prefix + spec.name).config.params
    small = storage.client.get_collection(server.prefix + META.name).config.params

    assert (sharded.shard_number, sharded.replication_factor, sharded.write_consistency_factor) == (3, 1, 1)
    assert small.shard_number == 1


def test_a_collection_created_meanwhile_by_another_process_is_taken_as_is(server: Server) -> None:
    first, second = server.open(), server.open()
    spec = shared.make_spec()
    first.collection(spec).upsert([shared.point(1, [1, 0, 0, 0])])

    # What a replica that checked before the other created it does next: the server answers 409.
    create_collection(second.client, server.prefix + spec.name, spec, second.cluster)

    assert second.collection(spec).count() == 1
