"""The storage protocol, checked the same way on every backend.

Each test gets a ``storage`` (a fresh engine) and a ``reopen`` callable that returns a
storage over the same data. ``tests/server`` reuses these tests against a Qdrant server
by providing its own ``storage`` and ``reopen`` fixtures.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from router.catalog.records import MetaStore
from router.storage.base import (
    CollectionSpec,
    PointData,
    Search,
    SparseVector,
    Storage,
    StorageUnavailable,
)
from router.storage.client import ClientStorage

pytestmark = pytest.mark.integration

Reopen = Callable[[Storage], Storage]


def pid(n: int) -> str:
    """A stable point id for a small integer."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"point-{n}"))


def make_spec(*, dense_size: int | None = 4, sparse: bool = True) -> CollectionSpec:
    """A spec with a random name, so tests never see each other's points."""
    return CollectionSpec(
        name=f"t_{uuid.uuid4().hex[:12]}",
        dense_size=dense_size,
        sparse=sparse,
        tenant_field="namespace",
        keyword_fields=("kind",),
        integer_fields=("seq",),
    )


def point(n: int, dense: list[float] | None = None, **payload: Any) -> PointData:
    return PointData(id=pid(n), payload=payload, dense=dense)


@pytest.fixture(params=["edge", "client"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Storage, Reopen]]:
    current: list[Storage] = []
    if request.param == "edge":
        # Imported here so the client backend runs even while edge.py is missing or broken.
        from router.storage.edge import EdgeStorage

        def reopen(old: Storage) -> Storage:
            old.close()
            current[0] = EdgeStorage(tmp_path / "data")
            return current[0]

        current.append(EdgeStorage(tmp_path / "data"))
    else:

        def reopen(old: Storage) -> Storage:
            # An in-memory store lives as long as its client: reopen over the same client.
            assert isinstance(old, ClientStorage)
            current[0] = ClientStorage(old.client)
            return current[0]

        current.append(ClientStorage.in_memory())
    yield current[0], reopen
    current[0].close()


@pytest.fixture
def storage(backend: tuple[Storage, Reopen]) -> Storage:
    return backend[0]


@pytest.fixture
def reopen(backend: tuple[Storage, Reopen]) -> Reopen:
    return backend[1]


def test_open_is_idempotent(storage: Storage) -> None:
    spec = make_spec()
    storage.collection(spec).upsert([point(1, [1, 0, 0, 0]), point(2, [0, 1, 0, 0])])

    again = storage.collection(spec)

    assert storage.exists(spec.name)
    assert again.count() == 2
    assert again.spec == spec


def test_upsert_then_retrieve_round_trips_payload(storage: Storage) -> None:
    payload = {
        "name": "book_flight",
        "seq": 3,
        "score": 0.5,
        "enabled": True,
        "tags": ["travel", "air"],
        "schema": {"params": [{"name": "to", "required": True}], "meta": {"v": 2}},
    }
    coll = storage.collection(make_spec())
    coll.upsert([PointData(id=pid(1), payload=payload, dense=[1, 0, 0, 0])])

    records = coll.retrieve([pid(1), pid(99)])

    assert [(r.id, r.payload) for r in records] == [(pid(1), payload)]
    assert coll.retrieve([]) == []


def test_upsert_replaces_point_with_same_id(storage: Storage) -> None:
    coll = storage.collection(make_spec())
    coll.upsert([point(1, [1, 0, 0, 0], name="old", extra=1)])

    coll.upsert([point(1, [0, 1, 0, 0], name="new")])

    assert coll.count() == 1
    assert coll.retrieve([pid(1)])[0].payload == {"name": "new"}
    assert coll.search(dense=[0, 1, 0, 0], limit=1)[0].score == pytest.approx(1.0, abs=1e-4)


def test_delete_by_ids_ignores_unknown(storage: Storage) -> None:
    coll = storage.collection(make_spec())
    coll.upsert([point(n, [1, n, 0, 0]) for n in range(3)])

    coll.delete([pid(0), pid(2), pid(42)])
    coll.delete([])

    assert [r.id for r in coll.scroll()] == [pid(1)]


def test_delete_where_removes_only_matching(storage: Storage) -> None:
    coll = storage.collection(make_spec())
    coll.upsert([point(n, [1, 0, 0, n], namespace="a" if n < 3 else "b") for n in range(5)])

    coll.delete_where({"namespace": "a"})

    assert coll.count() == 2
    assert {r.payload["namespace"] for r in coll.scroll()} == {"b"}


def test_scroll_filters_by_value_and_any_of_list(storage: Storage) -> None:
    coll = storage.collection(make_spec())
    kinds = ["tool", "catalog", "memory", "tool"]
    coll.upsert([point(n, [1, 0, n, 0], kind=k, namespace="ns") for n, k in enumerate(kinds)])

    tools = {r.id for r in coll.scroll({"kind": "tool"})}
    tools_or_memories = {r.id for r in coll.scroll({"kind": ["tool", "memory"]})}
    none = list(coll.scroll({"kind": "tool", "namespace": "other"}))

    assert tools == {pid(0), pid(3)}
    assert tools_or_memories == {pid(0), pid(2), pid(3)}
    assert none == []
    assert len(list(coll.scroll({}))) == 4


def test_scroll_orders_by_integer_field(storage: Storage) -> None:
    coll = storage.collection(make_spec())
    seqs = [5, 1, 4, 2, 3, 0]
    coll.upsert([point(n, [1, 1, 0, n], seq=s, kind="a" if s % 2 else "b") for n, s in enumerate(seqs)])

    ordered = [r.payload["seq"] for r in coll.scroll(order_by="seq")]
    odd = [r.payload["seq"] for r in coll.scroll({"kind": "a"}, order_by="seq")]

    assert ordered == [0, 1, 2, 3, 4, 5]
    assert odd == [1, 3, 5]


def test_scroll_pages_through_many_points(storage: Storage) -> None:
    coll = storage.collection(make_spec(dense_size=4, sparse=False))
    total = 650
    coll.upsert([point(n, [1, n % 7, n % 5, 1], seq=n, kind=str(n % 2)) for n in range(total)])

    ids = [r.id for r in coll.scroll()]
    odd = list(coll.scroll({"kind": "1"}, order_by="seq"))

    assert len(ids) == total
    assert set(ids) == {pid(n) for n in range(total)}
    assert [r.payload["seq"] for r in odd] == list(range(1, total, 2))


def test_count_with_and_without_match(storage: Storage) -> None:
    coll = storage.collection(make_spec())
    assert coll.count() == 0
    coll.upsert([point(n, [1, 0, 0, n], namespace=f"ns{n % 3}") for n in range(7)])

    assert coll.count() == 7
    assert coll.count({"namespace": "ns0"}) == 3
    assert coll.count({"namespace": ["ns1", "ns2"]}) == 4
    assert coll.count({"namespace": "missing"}) == 0


def test_dense_search_ranks_nearest_first(storage: Storage) -> None:
    coll = storage.collection(make_spec())
    coll.upsert(
        [
            point(1, [0, 0, 1, 0], name="far"),
            point(2, [1, 0, 0, 0], name="same"),
            point(3, [0.9, 0.1, 0, 0], name="close"),
            point(4, [0.5, 0.5, 0, 0], name="mid"),
        ]
    )

    hits = coll.search(dense=[2, 0, 0, 0], limit=3)

    assert [h.payload["name"] for h in hits] == ["same", "close", "mid"]
    assert hits[0].id == pid(2)
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert hits[0].score > hits[1].score > hits[2].score


def test_dense_search_respects_match(storage: Storage) -> None:
    coll = storage.collection(make_spec())
    coll.upsert(
        [
            point(1, [1, 0, 0, 0], namespace="travel"),
            point(2, [1, 0, 0, 0], namespace="billing"),
            point(3, [0, 1, 0, 0], namespace="billing"),
        ]
    )

    billing = coll.search(dense=[1, 0, 0, 0], match={"namespace": "billing"})
    either = coll.search(dense=[1, 0, 0, 0], match={"namespace": ["travel", "billing"]})

    assert [h.id for h in billing] == [pid(2), pid(3)]
    assert {h.id for h in either} == {pid(1), pid(2), pid(3)}
    assert coll.search(dense=[1, 0, 0, 0], match={"namespace": "none"}) == []


def test_sparse_only_search(storage: Storage) -> None:
    coll = storage.collection(make_spec())
    coll.upsert(
        [
            PointData(id=pid(1), payload={}, sparse=SparseVector([1], [1.0])),
            PointData(id=pid(2), payload={}, sparse=SparseVector([2], [1.0])),
            PointData(id=pid(3), payload={}, sparse=SparseVector([1, 3], [0.5, 1.0])),
        ]
    )

    hits = coll.search(sparse=SparseVector([1], [1.0]))

    assert [h.id for h in hits] == [pid(1), pid(3)]
    assert hits[0].score > hits[1].score > 0


def hybrid_points() -> list[PointData]:
    """Best dense alone, best sparse alone, and one second in both lists."""
    return [
        PointData(id=pid(1), payload={"name": "dense_only"}, dense=[1, 0, 0, 0]),
        PointData(id=pid(2), payload={"name": "sparse_only"}, sparse=SparseVector([7], [1.0])),
        PointData(
            id=pid(3),
            payload={"name": "both"},
            dense=[0.99, 0.14, 0, 0],
            sparse=SparseVector([7], [0.8]),
        ),
        PointData(
            id=pid(4),
            payload={"name": "filler"},
            dense=[0, 0, 1, 0],
            sparse=SparseVector([99], [1.0]),
        ),
    ]


def test_a_search_given_both_vectors_ranks_by_the_dense_one(storage: Storage) -> None:
    coll = storage.collection(make_spec())
    coll.upsert(hybrid_points())

    hits = coll.search(dense=[1, 0, 0, 0], sparse=SparseVector([7], [1.0]), limit=2)

    assert [h.payload["name"] for h in hits] == ["dense_only", "both"]


def test_searches_answer_each_request_in_one_call(storage: Storage) -> None:
    coll = storage.collection(make_spec())
    coll.upsert(
        [
            point(1, [1, 0, 0, 0], namespace="a", name="p1"),
            PointData(pid(2), {"namespace": "a", "name": "p2"}, [0, 1, 0, 0], SparseVector([7], [1.0])),
            PointData(pid(3), {"namespace": "b", "name": "p3"}, [0, 1, 0, 0], SparseVector([7], [1.0])),
        ]
    )
    requests = [
        Search(dense=[1, 0, 0, 0], match={"namespace": "a"}, limit=1),
        Search(sparse=SparseVector([], []), limit=5),
        Search(sparse=SparseVector([7], [1.0]), match={"namespace": "a"}, limit=5, fields=("name",)),
        Search(dense=[0, 1, 0, 0], match={"namespace": "a", "name": ["p1"]}, limit=5),
    ]

    results = coll.searches(requests)

    assert [[h.id for h in hits] for hits in results] == [[pid(1)], [], [pid(2)], [pid(1)]]
    assert results[0][0].score == pytest.approx(1.0, abs=1e-4)
    assert results[3][0].score == pytest.approx(0.0, abs=1e-4)
    assert set(results[2][0].payload) == {"name"}
    assert "namespace" in results[0][0].payload
    assert coll.searches([]) == []


def test_a_search_returns_the_dense_vectors_only_when_asked(storage: Storage) -> None:
    coll = storage.collection(make_spec())
    coll.upsert([point(1, [0.6, 0.8, 0, 0], name="p1"), point(2, [0, 0, 1, 0], name="p2")])

    bare, found = coll.searches(
        [Search(dense=[1, 0, 0, 0], limit=2), Search(dense=[1, 0, 0, 0], limit=2, vectors=True)]
    )

    assert all(h.vector is None for h in bare)
    assert [h.id for h in found] == [pid(1), pid(2)]
    # Stored as given (cosine collections may keep them normalised: these are).
    assert found[0].vector == pytest.approx([0.6, 0.8, 0, 0], abs=1e-6)
    assert found[1].vector == pytest.approx([0, 0, 1, 0], abs=1e-6)


def test_payload_fields_limit_search_and_retrieve(storage: Storage) -> None:
    coll = storage.collection(make_spec())
    coll.upsert([point(1, [1, 0, 0, 0], namespace="a", name="p1")])

    hit = coll.search(dense=[1, 0, 0, 0], limit=1, fields=("name",))[0]
    record = coll.retrieve([pid(1)], fields=("namespace",))[0]

    assert hit.payload == {"name": "p1"}
    assert record.payload == {"namespace": "a"}
    assert set(coll.retrieve([pid(1)])[0].payload) >= {"name", "namespace"}


def test_payload_only_collection(storage: Storage) -> None:
    spec = make_spec(dense_size=None, sparse=False)
    coll = storage.collection(spec)
    coll.upsert([point(n, None, namespace="x" if n % 2 else "y", seq=n) for n in range(5)])

    assert coll.count() == 5
    assert coll.count({"namespace": "x"}) == 2
    assert [r.payload["seq"] for r in coll.scroll({"namespace": "y"}, order_by="seq")] == [0, 2, 4]
    coll.delete_where({"namespace": "y"})
    assert sorted(r.id for r in coll.scroll()) == sorted([pid(1), pid(3)])


def test_drop_removes_collection(storage: Storage) -> None:
    spec = make_spec()
    storage.collection(spec).upsert([point(1, [1, 0, 0, 0])])

    storage.drop(spec.name)
    storage.drop(spec.name)
    storage.drop("never_created")

    assert not storage.exists(spec.name)
    assert storage.collection(spec).count() == 0


def test_reopened_storage_keeps_points(storage: Storage, reopen: Reopen) -> None:
    spec = make_spec()
    storage.collection(spec).upsert([point(1, [1, 0, 0, 0], name="kept", seq=1)])

    reopened = reopen(storage)

    assert reopened.exists(spec.name)
    coll = reopened.collection(spec)
    assert [(r.id, r.payload) for r in coll.scroll()] == [(pid(1), {"name": "kept", "seq": 1})]
    assert coll.search(dense=[1, 0, 0, 0])[0].id == pid(1)


def test_unreachable_server_raises_storage_unavailable() -> None:
    storage = ClientStorage.from_url("http://127.0.0.1:1", timeout=2)
    try:
        with pytest.raises(StorageUnavailable, match=r"http://127\.0\.0\.1:1"):
            storage.collection(make_spec())
    finally:
        storage.close()


def test_scroll_can_return_only_some_payload_fields(storage: Storage) -> None:
    coll = storage.collection(CollectionSpec(name=f"f{uuid.uuid4().hex[:8]}", tenant_field="namespace"))
    coll.upsert([PointData(id=str(uuid.uuid4()), payload={"namespace": "a", "name": "x", "big": list(range(50))})])
    (record,) = coll.scroll({"namespace": "a"}, fields=["name"])
    assert record.payload == {"name": "x"}


def test_a_catalogs_version_comes_back_as_written(storage: Storage) -> None:
    meta = MetaStore.open(storage)
    written = [meta.put_catalog(f"ns{i}", source="api", count=1) for i in range(200)]
    read = [meta.catalog(r.namespace) for r in written]
    assert [r.updated_at if r else None for r in read] == [r.updated_at for r in written]
