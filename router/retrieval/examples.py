"""Usage examples: requests that led to a call of a function, embedded as queries.

Examples live in their own collection per embedding model (they are queries, so the function
text template does not matter to them), carry the content hash of the function version they
were recorded against, and are deleted with their function or when it changes.

A function's examples are bounded without forgetting what kinds of request it serves: a new
request as close as ``MERGE_SIMILARITY`` to a kept one adds nothing (the kept one already
answers for it), and once a function holds ``MAX_EXAMPLES``, a new request replaces the kept
one nearest to it, so the set keeps one prototype per region of requests rather than the
latest few (``benchmarks/RESULTS.md`` compares the two).
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from router.embedding import Embedder, Vectors
from router.retrieval.voting import DEFAULT_REACH, SAME, Reach, Stored, agree, overruled
from router.storage.base import Collection, CollectionSpec, Hit, PointData, Record, Search, Storage

# A frequent function's requests spread wide: a cap of 64 dropped nearly half of APIBench's most used
# function's requests and cost 0.03 R@1 (benchmarks/RESULTS.md, bounded usage examples).
MAX_EXAMPLES = 256
# Two requests this close are the same request in other words (on all-MiniLM-L6-v2's scale, ``Reach``).
MERGE_SIMILARITY = 0.95
_BATCH = 256
_IDS = uuid.UUID("5d2e8f61-7a3c-4b9e-a1d4-0c6b8e2f9a73")
# Every payload field of an example: all small, so embedded storage may keep them in memory.
_FIELDS = ("namespace", "name", "text", "hash", "seq", "with")
_LISTED = ("namespace", "name", "text", "seq", "with")
# One writer at a time per collection in this process: adding reads the kept examples, then writes,
# so two posts at once lost a name from an example's "with", kept one request twice, or wrote back
# an example deleted in between. Keyed by collection: several stores may open the same one.
_WRITERS: dict[str, threading.Lock] = {}
_WRITERS_GUARD = threading.Lock()


def _writer(collection: str) -> threading.Lock:
    with _WRITERS_GUARD:
        return _WRITERS.setdefault(collection, threading.Lock())


@dataclass(frozen=True)
class Example:
    """A request that led to a call of ``name``; ``together``: the other functions its run called for it."""

    name: str
    text: str
    together: tuple[str, ...] = ()


@dataclass(frozen=True)
class Nearest:
    """A function's usage example closest to a request.

    Attributes:
        similarity: cosine similarity of the request to the example.
        hash: content hash of the function version the example was recorded against.
        text: the example's request text.
        runs: how many of the function's stored requests (of that version, near-duplicates
            merged) ask the same thing as the request: lie within ``SAME`` of it.
    """

    similarity: float
    hash: str
    text: str
    runs: int = 0


class ExampleStore:
    """Usage examples of every namespace, embedded by one model.

    ``reach`` says where the model's cosine between two requests says they ask the same thing
    (``router.retrieval.voting.Reach``): how far an example speaks, and which merge.
    """

    def __init__(self, collection: Collection, *, model: str = "", reach: Reach = DEFAULT_REACH) -> None:
        self.collection = collection
        self.model = model
        self.reach = reach
        self._writing = _writer(collection.spec.name)

    @classmethod
    def open(cls, storage: Storage, *, model: str, dimension: int, reach: Reach = DEFAULT_REACH) -> ExampleStore:
        """Open (creating when missing) the examples collection of ``model``."""
        return cls(storage.collection(cls.spec(model=model, dimension=dimension)), model=model, reach=reach)

    @staticmethod
    def spec(*, model: str, dimension: int) -> CollectionSpec:
        """The collection holding the examples embedded by ``model``."""
        key = hashlib.sha256(f"{model}|{dimension}".encode()).hexdigest()[:12]
        return CollectionSpec(
            name=f"examples-{key}",
            dense_size=dimension,
            tenant_field="namespace",
            keyword_fields=("name",),
            integer_fields=("seq",),
        )

    def add(self, namespace: str, examples: Sequence[tuple[Example, str]], vectors: Vectors) -> int:
        """Keep examples with their function's content hash, merging near-duplicates.

        The same request is kept once; one within ``MERGE_SIMILARITY`` of a kept example of
        its function is dropped, or replaces it when that one was kept for another version of
        the function; at ``MAX_EXAMPLES``, a new one replaces the nearest kept one.

        Args:
            namespace: the catalog.
            examples: each example with the content hash of its function.
            vectors: the examples' embeddings, in the same order.

        Returns:
            How many were kept.
        """
        with self._writing:
            return self._add(namespace, examples, vectors, create=True)

    def join(self, namespace: str, examples: Sequence[tuple[Example, str]], vectors: Vectors) -> None:
        """Merge into the kept examples of these requests what their runs called beside them (a run's later post).

        Nothing new is kept: an example not kept, perhaps deleted since, stays gone.
        """
        with self._writing:
            self._add(namespace, examples, vectors, create=False)

    def _add(self, namespace: str, examples: Sequence[tuple[Example, str]], vectors: Vectors, *, create: bool) -> int:
        seq = time.time_ns() // 1_000
        kept = 0
        for i, (example, content_hash) in enumerate(examples):
            vector = vectors[i].tolist()
            match = {"namespace": namespace, "name": example.name}
            nearest = self.collection.searches([Search(dense=vector, match=match, limit=1, vectors=True)])[0]
            same = nearest and self.reach.scaled(nearest[0].score) >= MERGE_SIMILARITY
            if same and nearest[0].payload.get("hash") == content_hash:
                self._join(nearest[0], example.together)
                continue
            if not create:
                continue
            # The same request kept for an older version of the function goes: left as the nearest,
            # it would hide the new one and let each further paraphrase be kept again.
            if same or (nearest and self.collection.count(match) >= MAX_EXAMPLES):
                self.collection.delete([nearest[0].id])
            point = _point(namespace, example)
            payload: dict[str, object] = {"namespace": namespace, "name": example.name, "text": example.text}
            payload.update({"hash": content_hash, "seq": seq + i, "with": list(example.together)})
            self.collection.upsert([PointData(id=point, payload=payload, dense=vector)])
            kept += 1
        return kept

    def _join(self, kept: Hit, together: Sequence[str]) -> None:
        """A request merged into a kept example: the example keeps what either run called beside it."""
        known = list(kept.payload.get("with", ()))
        added = [name for name in together if name not in known]
        if added and kept.vector is not None:
            payload = {**kept.payload, "with": known + added}
            self.collection.upsert([PointData(id=kept.id, payload=payload, dense=kept.vector)])

    def nearest(self, namespace: str, vector: Sequence[float], *, limit: int) -> dict[str, Nearest]:
        """The functions whose examples speak for a request at ``vector``, each with its closest example.

        A function's examples speak for the request when its ``k`` closest ones (distinct
        stored requests, near-duplicates being merged) all lie within ``SAME**k`` of it on
        all-MiniLM-L6-v2's scale (``reach``), for some ``k`` (see ``agree``; 1 alone when the
        reach does not widen), and the stored
        requests that ask the same thing do not overrule them (see ``overruled``). The
        similarities returned are the model's own.
        """
        search = Search(dense=vector, match={"namespace": namespace}, limit=limit * 2, fields=_FIELDS, vectors=True)
        hits = self.collection.searches([search])[0]
        closest: dict[str, Hit] = {}
        similar: dict[str, list[float]] = {}
        same: dict[str, int] = {}
        scaled = [self.reach.scaled(hit.score) for hit in hits]
        for hit, score in zip(hits, scaled, strict=True):
            name = hit.payload["name"]
            similar.setdefault(name, []).append(score)
            first = closest.setdefault(name, hit)
            if score >= SAME and hit.payload["hash"] == first.payload["hash"]:
                same[name] = same.get(name, 0) + 1
        stored = [
            Stored(h.payload["name"], s, h.vector, h.payload.get("with", ())) for h, s in zip(hits, scaled, strict=True)
        ]
        left_out = overruled(stored, self.reach)
        spoken = [
            (name, Nearest(hit.score, hit.payload["hash"], hit.payload["text"], same.get(name, 0)))
            for name, hit in closest.items()
            if agree(similar[name], self.reach) and name not in left_out
        ]
        return dict(spoken[:limit])

    def texts(self, namespace: str, name: str) -> list[str]:
        """The example requests of one function, oldest first."""
        records = self.collection.scroll({"namespace": namespace, "name": name}, order_by="seq")
        return [r.payload["text"] for r in records]

    def count(self, namespace: str | None = None) -> int:
        """How many examples are kept (in one namespace, or in all)."""
        return self.collection.count({"namespace": namespace} if namespace else None)

    def forget(self, namespace: str, names: Sequence[str]) -> None:
        """Delete every example of the named functions."""
        with self._writing:
            self.collection.delete_where({"namespace": namespace, "name": list(names)})

    def held(self, namespace: str, examples: Sequence[Example]) -> set[Example]:
        """Which of ``examples`` are kept under their own request text (as ``remove`` finds them)."""
        points = {_point(namespace, e): e for e in examples}
        return {points[r.id] for r in self.collection.retrieve(list(points), fields=("name",))}

    def remove(self, namespace: str, examples: Sequence[Example]) -> None:
        """Delete the examples kept for exactly these requests (a run's superseded calls)."""
        with self._writing:
            self.collection.delete([_point(namespace, e) for e in examples])

    def page(self, namespace: str, *, name: str | None = None, limit: int, after: str | None = None) -> list[Record]:
        """Up to ``limit`` examples of ``namespace`` (of one function when ``name``), oldest first, after a cursor.

        The cursor is ``cursor(record)`` of the last example of the previous page.
        """
        match: dict[str, str] = {"namespace": namespace} if name is None else {"namespace": namespace, "name": name}
        found: list[Record] = []
        for record in self.collection.scroll(match, order_by="seq", fields=_LISTED):
            if after is None or cursor(record) > after:
                found.append(record)
                if len(found) == limit:
                    break
        return found

    def delete(self, namespace: str, example_id: str) -> bool:
        """Delete one example of ``namespace`` by id; False when it holds none of that id."""
        with self._writing:
            found = self.collection.retrieve([example_id], fields=("namespace",)) if _is_uuid(example_id) else []
            if not found or found[0].payload.get("namespace") != namespace:
                return False
            self.collection.delete([example_id])
            return True

    def clear(self, namespace: str, *, name: str | None = None) -> int:
        """Delete every example of ``namespace`` (of one function when ``name``); returns how many."""
        match: dict[str, str] = {"namespace": namespace} if name is None else {"namespace": namespace, "name": name}
        with self._writing:
            count = self.collection.count(match)
            self.collection.delete_where(match)
            return count

    def records(self, *, after: int = -1) -> list[Record]:
        """Every example kept, oldest first (only those stored after ``seq`` ``after`` when given)."""
        return [r for r in self.collection.scroll(order_by="seq") if int(r.payload.get("seq", 0)) > after]

    def put(self, records: Sequence[Record], vectors: Vectors) -> None:
        """Write examples read from another store with new vectors, ids and payloads kept."""
        points = [PointData(id=r.id, payload=dict(r.payload), dense=vectors[i].tolist()) for i, r in enumerate(records)]
        with self._writing:
            self.collection.upsert(points)


def cursor(record: Record) -> str:
    """Where a page of examples ends: the example's order and id, comparable as text."""
    return f"{int(record.payload.get('seq', 0)):020d}.{record.id}"


def _point(namespace: str, example: Example) -> str:
    return str(uuid.uuid5(_IDS, f"{namespace}\x00{example.name}\x00{example.text}"))


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


async def reembed(source: ExampleStore, target: ExampleStore, embedder: Embedder, *, after: int = -1) -> int:
    """Copy every example of ``source`` into ``target``, embedded by ``embedder`` (a new model).

    Payloads (namespace, function, text, content hash, order) stay as they are; only the
    vectors change, so a new model keeps what usage taught the old one. Returns the highest
    ``seq`` copied (``after`` when none), so a second pass can copy only what came since.
    """
    records = await asyncio.to_thread(source.records, after=after)
    for start in range(0, len(records), _BATCH):
        chunk = records[start : start + _BATCH]
        vectors = await embedder.embed([r.payload["text"] for r in chunk], kind="example")
        await asyncio.to_thread(target.put, chunk, vectors)
    return max((int(r.payload.get("seq", 0)) for r in records), default=after)
