"""Dense searches answered from memory below the index threshold give what the engine gives.

Two real Qdrant Edge stores get the same writes: one answers the dense searches it can from its
in-memory tier, the other always asks the engine. Every search must agree.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from router.storage.base import CollectionSpec, Hit, PointData, Search, SparseVector
from router.storage.edge import EdgeCollection, EdgeStorage
from router.storage.edge_index import IndexPolicy

pytestmark = pytest.mark.integration

DIM = 16
FIELDS = ("namespace", "name", "hash")
SPEC = CollectionSpec(
    name="functions", dense_size=DIM, sparse=True, tenant_field="namespace", keyword_fields=("name",),
    resident_fields=FIELDS,
)  # fmt: skip
NAMESPACES = ("travel", "finance", "weather")


def seeded(seed: int) -> random.Random:
    return random.Random(seed)  # noqa: S311 - test data, not secrets


def pid(namespace: str, name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{namespace}/{name}"))


def point(rng: random.Random, namespace: str, name: str) -> PointData:
    vector = [rng.gauss(0, 1) for _ in range(DIM)]
    payload = {"namespace": namespace, "name": name, "hash": f"{rng.getrandbits(64):016x}", "definition": {"n": name}}
    sparse = SparseVector(indices=[rng.randrange(50)], values=[rng.uniform(0.1, 2.0)])
    return PointData(id=pid(namespace, name), payload=payload, dense=vector, sparse=sparse)


class Pair:
    """Two stores given the same writes: one with the in-memory tier, one without."""

    def __init__(self, root: Path, policy: IndexPolicy | None = None) -> None:
        self.root = root
        self.policy = policy
        self.open()

    def open(self) -> None:
        self.exact = EdgeStorage(self.root / "exact", index=self.policy)
        self.engine = EdgeStorage(self.root / "engine", index=self.policy, exact=False)
        self.fast: EdgeCollection = self.exact.collection(SPEC)
        self.slow: EdgeCollection = self.engine.collection(SPEC)

    def close(self) -> None:
        self.exact.close()
        self.engine.close()

    def upsert(self, points: list[PointData]) -> None:
        self.fast.upsert(points)
        self.slow.upsert(points)

    def delete(self, ids: list[str]) -> None:
        self.fast.delete(ids)
        self.slow.delete(ids)

    def delete_where(self, match: dict[str, object]) -> None:
        self.fast.delete_where(match)  # type: ignore[arg-type]
        self.slow.delete_where(match)  # type: ignore[arg-type]


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    opened = Pair(tmp_path)
    yield opened
    opened.close()


def same(found: list[Hit], expected: list[Hit]) -> None:
    # Equal scores (sparse ones of a single term) may come in either order from two shards.
    def order(hits: list[Hit]) -> list[tuple[float, str, dict[str, object]]]:
        return sorted(((-round(h.score, 5), h.id, h.payload) for h in hits), key=lambda t: (t[0], t[1]))

    assert [h.id for h in found] == [h.id for h in sorted(found, key=lambda h: -h.score)]
    assert [(i, p) for _, i, p in order(found)] == [(i, p) for _, i, p in order(expected)]
    assert np.allclose([h.score for h in found], [h.score for h in expected], atol=1e-5)


def queries(rng: random.Random, names: list[str]) -> list[Search]:
    vector = [rng.gauss(0, 1) for _ in range(DIM)]
    some = [*rng.sample(names, min(len(names), 7)), "missing"]
    return [
        Search(dense=vector, match={"namespace": rng.choice(NAMESPACES)}, limit=5, fields=("name", "hash")),
        Search(dense=vector, match={"namespace": rng.choice(NAMESPACES), "name": some}, limit=20, fields=FIELDS),
        Search(dense=vector, match=None, limit=12, fields=("name",)),
        Search(dense=vector, match={"namespace": "nowhere"}, limit=5, fields=("name",)),
        Search(sparse=SparseVector(indices=[rng.randrange(50)], values=[1.0]), limit=5, fields=("name",)),
    ]


def check(pair: Pair, rng: random.Random, names: list[str]) -> None:
    for _ in range(5):
        asked = queries(rng, names)
        for found, expected in zip(pair.fast.searches(asked), pair.slow.searches(asked), strict=True):
            same(found, expected)
        first = asked[0]
        one = pair.fast.search(dense=first.dense, match=first.match, limit=first.limit, fields=first.fields)
        same(one, pair.slow.search(dense=first.dense, match=first.match, limit=first.limit, fields=first.fields))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_write_reaches_the_tier(pair: Pair, seed: int) -> None:
    rng = seeded(seed)
    names = [f"fn_{i}" for i in range(60)]
    pair.upsert([point(rng, rng.choice(NAMESPACES), n) for n in names])
    assert pair.fast.exact
    assert not pair.slow.exact
    check(pair, rng, names)
    for _ in range(8):
        stored = [r.payload for r in pair.slow.scroll(fields=("namespace", "name"))]
        step = rng.randrange(4)
        if step == 0:  # edits and new functions
            edited = rng.sample(stored, min(10, len(stored)))
            pair.upsert([point(rng, p["namespace"], p["name"]) for p in edited])
            pair.upsert([point(rng, rng.choice(NAMESPACES), f"new_{rng.getrandbits(32)}") for _ in range(5)])
        elif step == 1:
            doomed = rng.sample(stored, min(6, len(stored)))
            pair.delete([*(pid(p["namespace"], p["name"]) for p in doomed), pid("x", "unknown")])
        elif step == 2:
            gone = rng.sample(stored, min(4, len(stored))) or [{"namespace": "x", "name": "y"}]
            pair.delete_where({"namespace": gone[0]["namespace"], "name": [p["name"] for p in gone]})
        else:
            pair.delete_where({"namespace": rng.choice(NAMESPACES)})
        names = [r.payload["name"] for r in pair.slow.scroll(fields=("name",))] or ["none"]
        check(pair, rng, names)
    assert pair.fast.exact


def test_the_tier_is_read_back_from_the_shard_when_reopened(pair: Pair) -> None:
    rng = seeded(7)
    names = [f"fn_{i}" for i in range(40)]
    pair.upsert([point(rng, rng.choice(NAMESPACES), n) for n in names])
    pair.delete([pid(NAMESPACES[0], n) for n in names[:10]])
    pair.close()
    pair.open()

    assert pair.fast.exact
    check(pair, rng, names)


def test_searches_the_tier_cannot_answer_go_to_the_engine(pair: Pair) -> None:
    rng = seeded(3)
    pair.upsert([point(rng, rng.choice(NAMESPACES), f"fn_{i}") for i in range(30)])
    vector = [rng.gauss(0, 1) for _ in range(DIM)]
    # Fields the tier does not keep: all of the payload, or the definition.
    for fields in (None, ("name", "definition")):
        found = pair.fast.search(dense=vector, limit=5, fields=fields)
        same(found, pair.slow.search(dense=vector, limit=5, fields=fields))
        assert "definition" in found[0].payload
    # A filter on a field the tier does not keep removes points it cannot tell, so the tier goes.
    pair.delete_where({"definition.n": "fn_3"})
    assert not pair.fast.exact
    check(pair, rng, [f"fn_{i}" for i in range(30)])


def test_past_the_index_threshold_the_engine_answers(tmp_path: Path) -> None:
    pair = Pair(tmp_path, IndexPolicy(threshold=50, quiet=3600))
    try:
        rng = seeded(5)
        pair.upsert([point(rng, rng.choice(NAMESPACES), f"fn_{i}") for i in range(40)])
        assert pair.fast.exact
        pair.upsert([point(rng, rng.choice(NAMESPACES), f"more_{i}") for i in range(20)])
        check(pair, rng, [f"fn_{i}" for i in range(40)])
        assert not pair.fast.exact
        pair.close()
        pair.open()
        assert not pair.fast.exact  # 60 points: more than the tier keeps
        check(pair, rng, [f"more_{i}" for i in range(20)])
    finally:
        pair.close()
