"""What must change to make a stored catalog equal to a desired one."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from router import heap
from router.catalog import FunctionDef, fingerprint_of
from router.retrieval.index import FunctionStore
from router.retrieval.texts import template
from sync.delta import Delta


@dataclass(frozen=True)
class Plan:
    """The difference between the desired functions and the stored hashes.

    Attributes:
        added: functions not stored yet.
        updated: functions stored with a different content hash.
        removed: names stored but no longer desired.
        unchanged: names stored with the same hash.
    """

    added: list[FunctionDef] = field(default_factory=list)
    updated: list[FunctionDef] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    @property
    def to_embed(self) -> list[FunctionDef]:
        """The functions whose vectors must be computed."""
        return self.added + self.updated


def plan(desired: Sequence[FunctionDef], stored: Mapping[str, str]) -> Plan:
    """Compare desired functions with the stored ``{name: content_hash}``."""
    result = Plan()
    wanted = {f.name for f in desired}
    for function in desired:
        previous = stored.get(function.name)
        if previous is None:
            result.added.append(function)
        elif previous != function.content_hash:
            result.updated.append(function)
        else:
            result.unchanged.append(function.name)
    result.removed.extend(sorted(name for name in stored if name not in wanted))
    return result


@dataclass(frozen=True)
class Summary:
    """What a reconcile did to one namespace (counts of functions)."""

    namespace: str
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0

    @classmethod
    def of(cls, namespace: str, plan: Plan) -> Summary:
        """The summary of applying ``plan``."""
        return cls(namespace, len(plan.added), len(plan.updated), len(plan.removed), len(plan.unchanged))

    @property
    def changed(self) -> bool:
        """Whether anything was written."""
        return bool(self.added or self.updated or self.removed)

    def counts(self) -> dict[str, Any]:
        """The four counts, as the HTTP API answers them."""
        return {"added": self.added, "updated": self.updated, "removed": self.removed, "unchanged": self.unchanged}


class Known(Mapping[str, str]):
    """What the writer knows of a namespace it wrote: each function's content hash (the mapping) and fingerprint.

    One 48-byte value per function (hash digest and fingerprint), under a copy of its name. Kept
    from one apply to the next, the parsed catalog's own name strings held the pages of the whole
    parse (Python's allocator returns a page only when nothing on it lives): 300 MB at 100k.

    When the catalog was written from a body split into its definitions' bytes (``parts``: their
    digests, in body order), the record also names each definition by its digest, so the next
    body is told apart without decoding what it repeats (``plan_delta``).
    """

    ENTRY = 48  # bytes per function: its content hash and its fingerprint

    def __init__(self, functions: Sequence[FunctionDef] = (), parts: Sequence[bytes] | None = None) -> None:
        self._entries = {_own(f.name): _entry(f) for f in functions}
        self._runs = {key for run in _runs(functions) if (key := _run_key(run)) is not None}
        self._parts = _keep_parts(parts, [f.name for f in functions])

    @classmethod
    def restored(cls, names: Sequence[str], entries: bytes, digests: bytes, *, digest_size: int) -> Known:
        """The record ``state`` gave: ``names`` in body order, their entries and their parts' digests, joined."""
        known = cls()
        step = cls.ENTRY
        known._entries = {name: entries[i * step : (i + 1) * step] for i, name in enumerate(names)}
        known._parts = {digests[i * digest_size : (i + 1) * digest_size]: name for i, name in enumerate(names)}
        if len(known._entries) != len(names) or len(known._parts) != len(names):
            raise ValueError("a saved record names a function or a digest twice")
        return known

    def state(self) -> tuple[list[str], bytes, bytes] | None:
        """The names in body order, their entries and their parts' digests, joined; None without parts."""
        parts = self._parts
        if parts is None or len(parts) != len(self._entries) or len({len(digest) for digest in parts}) > 1:
            return None
        names = list(parts.values())
        if any(name not in self._entries for name in names):
            return None
        return names, b"".join(self._entries[name] for name in names), b"".join(parts)

    @property
    def parts(self) -> Mapping[bytes, str] | None:
        """Each definition's name by the digest of its bytes as last written, if written from a split body."""
        return self._parts

    def __getitem__(self, name: str) -> str:
        return self._entries[name][:_DIGEST].hex()

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def fingerprint(self, name: str) -> bytes | None:
        """The fingerprint of what was written as ``name``, if anything was."""
        entry = self._entries.get(name)
        return None if entry is None else entry[_DIGEST:]

    def plan(self, functions: Sequence[FunctionDef], parts: Sequence[bytes] | None = None) -> Plan:
        """``plan(functions, self)`` in one pass, then this record updated to what the plan leaves stored.

        Hashing every definition of a large catalog to find the one that changed costs more than
        the change (2 s for 100k). The functions come in runs (``_runs``): a run whose bytes are
        those of a run last written is unchanged as a whole, one serialisation for a hundred
        definitions. In any other run each definition's fingerprint is compared with the one
        written, and only a definition whose bytes differ is hashed. The record is then changed
        where the plan changes the store, which is why a caller keeps it only once the plan is
        written. ``parts``: the digests of the functions' bytes, when they came from a split body.
        """
        entries, result = self._entries, Plan()
        refreshed: list[FunctionDef] = []
        runs: set[bytes] = set()
        for run in _runs(functions):
            key = _run_key(run)
            if key is not None:
                runs.add(key)
                if key in self._runs:
                    result.unchanged.extend(f.name for f in run)
                    continue
            for function in run:
                # What the cached property ``fingerprint`` would compute and keep, read and set in
                # place: at 100k functions the property calls alone cost a tenth of a second.
                cached = function.__dict__
                fingerprint = cached.get("fingerprint")
                if fingerprint is None:
                    fingerprint = cached["fingerprint"] = fingerprint_of(function.definition)
                entry = entries.get(function.name)
                if entry is None:
                    result.added.append(function)
                elif entry.endswith(fingerprint):
                    result.unchanged.append(function.name)
                elif function.content_hash == entry[:_DIGEST].hex():
                    result.unchanged.append(function.name)
                    refreshed.append(function)  # the same content in other bytes: known by its new ones
                else:
                    result.updated.append(function)
        result.removed.extend(sorted(entries.keys() - {f.name for f in functions}))
        for name in result.removed:
            del entries[name]
        entries.update((_own(f.name), _entry(f)) for f in [*result.to_embed, *refreshed])
        self._runs = runs
        self._parts = _keep_parts(parts, [f.name for f in functions])
        return result

    def plan_delta(self, delta: Delta) -> Plan:
        """``plan`` of a body resolved against this record's ``parts``: only its fresh definitions are compared.

        Raises:
            ValueError: ``delta`` was resolved against another record.
        """
        if delta.basis is not self._parts:
            raise ValueError("the delta was resolved against another record of the namespace")
        entries, result = self._entries, Plan()
        names = list(delta.names)
        for index, name in enumerate(names):
            function = delta.fresh.get(index)
            if function is None:
                result.unchanged.append(name)
                continue
            names[index] = owned = _own(name)
            entry = entries.get(name)
            if entry is None:
                result.added.append(function)
            elif entry[:_DIGEST].hex() == function.content_hash:
                result.unchanged.append(name)  # the same content in other bytes
            else:
                result.updated.append(function)
            entries[owned] = _entry(function)
        result.removed.extend(sorted(entries.keys() - set(names)))
        for name in result.removed:
            del entries[name]
        self._runs = set()  # a split body leaves no runs: a later list is compared function by function
        self._parts = dict(zip(delta.digests, names, strict=True))
        return result


# A run ends after a name whose hash has these bits clear (128 functions on average): an added or
# removed function moves one cut, not every later one. ``hash`` is kept by each string and differs
# between processes, as records do not outlive theirs.
_RUN_MASK = 127
_RUN_MAX = 512


def _runs(functions: Sequence[FunctionDef]) -> Iterator[Sequence[FunctionDef]]:
    start = 0
    for end, function in enumerate(functions, 1):
        if not hash(function.name) & _RUN_MASK or end - start >= _RUN_MAX:
            yield functions[start:end]
            start = end
    if start < len(functions):
        yield functions[start:]


def _run_key(run: Sequence[FunctionDef]) -> bytes | None:
    """A digest of a run's definitions as orjson writes them, None when it cannot (integers beyond 64 bits)."""
    try:
        # sha256: twice blake2b's rate on CPUs with SHA instructions, and a run is 75 KB on average.
        return hashlib.sha256(orjson.dumps([f.definition for f in run])).digest()
    except TypeError:
        return None


def _keep_parts(parts: Sequence[bytes] | None, names: list[str]) -> dict[bytes, str] | None:
    return None if parts is None else dict(zip(parts, map(_own, names), strict=True))


def _own(name: str) -> str:
    # ``encode().decode()``: a new string, allocated apart from the parsed catalog's.
    return name.encode().decode()


def _entry(function: FunctionDef) -> bytes:
    return bytes.fromhex(function.content_hash) + function.fingerprint


_DIGEST = 32  # bytes of a sha256 content hash (then 16 of the fingerprint: ``Known.ENTRY``)


def prepare(
    store: FunctionStore,
    namespace: str,
    functions: Sequence[FunctionDef] | Delta,
    batch_size: int,
    known: Known | None = None,
    parts: Sequence[bytes] | None = None,
) -> tuple[Plan, list[str], list[FunctionDef], Known]:
    """The plan of an apply, the texts to embed with their functions, and the record of the store once written.

    Off the event loop: it hashes. ``known`` is what this writer last wrote to the namespace (and
    is updated to what the plan leaves); without it, hashes are read from the store. A ``Delta``
    needs the ``known`` it was resolved against; ``parts``: as for ``Known.plan``.
    """
    with heap.bulk():
        if isinstance(functions, Delta):
            if known is None:
                raise ValueError("a delta is planned against the record it was resolved against")
            todo = known.plan_delta(functions)
        elif known is not None:
            todo = known.plan(functions, parts)
        else:
            todo = plan(functions, store.hashes(namespace))
            known = Known(functions, parts)
    builder = template(store.generation.text)
    pairs = [(builder(f), f) for f in todo.to_embed]
    if len(pairs) > batch_size:
        # Texts of like length batch together with little padding: ~40% faster on BFCL's catalog.
        pairs.sort(key=lambda pair: len(pair[0]))
    return todo, [t for t, _ in pairs], [f for _, f in pairs], known
