"""What must change to make a stored catalog equal to a desired one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from router.catalog.functions import FunctionDef
from router.retrieval.index import FunctionStore
from router.retrieval.texts import template


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


def prepare(
    store: FunctionStore,
    namespace: str,
    functions: Sequence[FunctionDef],
    batch_size: int,
    stored: Mapping[str, str] | None = None,
) -> tuple[Plan, list[str], list[FunctionDef]]:
    """The plan of an apply against the stored hashes, and the texts to embed with their functions.

    ``stored``: the namespace's hashes when the caller knows them; read from the store otherwise.
    Blocking (it may read the store, and hashes every definition): run it off the event loop.
    """
    todo = plan(functions, store.hashes(namespace) if stored is None else stored)
    builder = template(store.generation.text)
    pairs = [(builder(f), f) for f in todo.to_embed]
    if len(pairs) > batch_size:
        # Texts of like length batch together with little padding: ~40% faster on BFCL's catalog.
        pairs.sort(key=lambda pair: len(pair[0]))
    return todo, [t for t, _ in pairs], [f for _, f in pairs]
