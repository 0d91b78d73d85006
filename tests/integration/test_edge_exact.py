"""Searches answered from memory below the index threshold give what the engine gives.

Two real Qdrant Edge stores get the same writes: one answers the searches it can from its
in-memory tier, the other always asks the engine. Dense searches must agree. Sparse ones are
checked against BM25 computed here from the points stored: the engine's counts include deleted
points until it vacuums them, so they agree with it only until the first delete.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Iterator, Mapping
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
    # Up to four of 50 terms (none for one point in ten), weights like BM25's.
    terms = sorted(rng.sample(range(50), rng.choice([0, 1, 2, 3, 4, 2, 3, 1, 2, 3])))
    sparse = SparseVector(indices=terms, values=[rng.uniform(0.1, 2.0) for _ in terms])
    return PointData(id=pid(namespace, name), payload=payload, dense=vector, sparse=sparse)


class Pair:
    """Two stores given the same writes: one with the in-memory tier, one without."""

    def __init__(self, root: Path, policy: IndexPolicy | None = None) -> None:
        self.root = root
        self.policy = policy
        self.stored: dict[str, PointData] = {}
        self.deleted = False
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
        self.stored.update((p.id, p) for p in points)
        self.deleted = self.deleted or any(p.id in self.stored for p in points)

    def delete(self, ids: list[str]) -> None:
        self.fast.delete(ids)
        self.slow.delete(ids)
        for point_id in ids:
            self.deleted = self.stored.pop(point_id, None) is not None or self.deleted

    def delete_where(self, match: dict[str, object]) -> None:
        self.fast.delete_where(match)  # type: ignore[arg-type]
        self.slow.delete_where(match)  # type: ignore[arg-type]
        self.delete([p.id for p in self.stored.values() if matches(p, match)])

    def bm25(self, search: Search) -> list[Hit]:
        """The sparse search worked out from the points stored."""
        assert search.sparse is not None
        held = [p for p in self.stored.values() if p.sparse is not None and p.sparse.indices]
        counts = {t: sum(t in p.sparse.indices for p in held if p.sparse) for t in search.sparse.indices}
        idf = {t: math.log((len(held) - n + 0.5) / (n + 0.5) + 1) for t, n in counts.items()}
        hits = []
        for p in held:
            assert p.sparse is not None
            values = dict(zip(p.sparse.indices, p.sparse.values, strict=True))
            shared = [t for t in search.sparse.indices if t in values]
            if shared and matches(p, search.match or {}):
                weights = dict(zip(search.sparse.indices, search.sparse.values, strict=True))
                score = sum(weights[t] * idf[t] * values[t] for t in shared)
                hits.append(Hit(id=p.id, score=score, payload={f: p.payload[f] for f in search.fields or ()}))
        return sorted(hits, key=lambda h: -h.score)[: search.limit]


def matches(point: PointData, match: Mapping[str, object]) -> bool:
    def value(key: str) -> object:
        found: object = point.payload
        for part in key.split("."):  # a nested field, as Qdrant reads "definition.n"
            found = found.get(part) if isinstance(found, dict) else None
        return found

    return all(value(k) == v if isinstance(v, str) else value(k) in v for k, v in match.items())  # type: ignore[operator]


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
        Search(sparse=words(rng), limit=5, fields=("name",)),
        Search(sparse=words(rng), match={"namespace": rng.choice(NAMESPACES)}, limit=8, fields=FIELDS),
        Search(sparse=words(rng), match={"namespace": rng.choice(NAMESPACES), "name": some}, limit=30, fields=FIELDS),
        Search(sparse=SparseVector(indices=[999], values=[1.0]), limit=5, fields=("name",)),
    ]


def words(rng: random.Random) -> SparseVector:
    terms = sorted(rng.sample(range(50), rng.randint(1, 3)))
    return SparseVector(indices=terms, values=[rng.uniform(0.5, 1.5) for _ in terms])


def check(pair: Pair, rng: random.Random, names: list[str]) -> None:
    for _ in range(5):
        asked = queries(rng, names)
        for search, found, expected in zip(asked, pair.fast.searches(asked), pair.slow.searches(asked), strict=True):
            if search.sparse is not None and pair.fast.exact:
                same(found, pair.bm25(search))
            if search.dense is not None or not pair.deleted or not pair.fast.exact:
                same(found, expected)
        for one in (asked[0], asked[5]):
            found = pair.fast.search(
                dense=one.dense, sparse=one.sparse, match=one.match, limit=one.limit, fields=one.fields
            )
            same(
                found, pair.slow.searches([one])[0] if one.dense is not None or not pair.fast.exact else pair.bm25(one)
            )


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


def test_a_tenant_holding_every_point_is_searched_without_its_filter(tmp_path: Path) -> None:
    storage = EdgeStorage(tmp_path / "data", exact=False)
    try:
        collection = storage.collection(SPEC)
        rng = seeded(11)
        collection.upsert([point(rng, "travel", f"fn_{i}") for i in range(30)])
        vector = [rng.gauss(0, 1) for _ in range(DIM)]
        asked = [
            Search(dense=vector, match={"namespace": "travel"}, limit=5, fields=("name",)),
            Search(sparse=words(rng), match={"namespace": "travel"}, limit=5, fields=None),
        ]
        tenants = collection._tenants
        assert tenants.whole({"namespace": "travel"})
        assert not tenants.whole({"namespace": "finance"})
        assert not tenants.whole({"namespace": "travel", "name": ["fn_1"]})
        alone = collection.searches(asked)
        nothing = Search(sparse=SparseVector(indices=[], values=[]), match={"namespace": "travel"}, limit=5)
        assert collection.searches([nothing]) == [[]]
        assert collection.search(dense=None, sparse=nothing.sparse, match=nothing.match) == []
        assert [set(h.payload) for h in alone[0]] == [{"name"}] * 5  # the tenant field asked to check is not returned
        assert all(h.payload["namespace"] == "travel" for h in alone[1])

        # Another tenant's point: known at the next search, whose filter is then kept.
        collection.upsert([point(rng, "finance", "close_match")])
        assert not tenants.whole({"namespace": "travel"})
        # A write the count has not seen yet (it ran during the search): its hit sends the search again.
        tenants.whole = lambda _match: True  # type: ignore[method-assign]
        collection.upsert([PointData(id=pid("finance", "near"), payload={"namespace": "finance", "name": "near"},
                                     dense=vector, sparse=asked[1].sparse)])  # fmt: skip
        found = collection.searches(asked)
        assert [h.payload["name"] for h in found[0]] == [h.payload["name"] for h in alone[0]]
        assert all(h.payload["namespace"] == "travel" for h in found[1])
        assert [h.id for h in found[1]] == [h.id for h in alone[1]]
    finally:
        storage.close()
