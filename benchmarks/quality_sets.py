"""The development sets of the quality benchmark, each a catalog with its requests.

- ``bfcl``: every BFCL function deduplicated by name (1,998); the development questions are
  every category but ``live_*`` (held out, routed last as a check), plus the
  ``multi_turn_base`` conversations.
- ``apibench``: Gorilla APIBench (``benchmarks.apibench``): 1,066 model APIs of three hubs
  and their 1,776 instructions; no held-out part and no conversations.
- ``sealtools``: Seal-Tools' development split (``benchmarks.sealtools``): 4,076 generated tools
  and 700 requests, 500 of them needing several tools (expected in call order).

Every set is split 50/50 by question (seeded) for usage learning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from benchmarks import apibench, sealtools
from benchmarks.bfcl import BfclFunction, BfclQuestion, dedupe_by_name, load_functions, load_questions
from benchmarks.quality_data import Conversation, load_conversations
from router.catalog.functions import FunctionDef

SETS = ("bfcl", "apibench", "sealtools")
_SMALL_CATALOG = 20


@dataclass(frozen=True)
class DevSet:
    """A development set: a catalog, its development requests and what else it offers."""

    name: str
    title: str
    functions: list[FunctionDef]
    dev: list[BfclQuestion]
    live: list[BfclQuestion] = field(default_factory=list)
    conversations: list[Conversation] = field(default_factory=list)
    pooled: list[BfclFunction] = field(default_factory=list)
    note: str = ""


def load_set(name: str, *, sample: int | None = None) -> DevSet:
    """Load one set (``sample`` keeps that many requests of each kind and a smaller catalog: a quick look)."""
    found = _load(name, sample)
    if sample is None:
        return found
    # A quick look also embeds less: the expected functions and a few hundred others.
    wanted = {n for q in (*found.dev, *found.live) for n in q.expected}
    wanted |= {n for c in found.conversations for t in c.turns for n in t.expected}
    functions = [f for i, f in enumerate(found.functions) if f.name in wanted or i < _SMALL_CATALOG]
    return replace(found, functions=functions)


def _load(name: str, sample: int | None) -> DevSet:
    if name == "bfcl":
        pooled = load_functions()
        questions = load_questions()
        return DevSet(
            "bfcl",
            "BFCL",
            [f.to_function_def() for f in dedupe_by_name(pooled)],
            _every(sample, [q for q in questions if not q.held_out]),
            live=_every(sample, [q for q in questions if q.held_out]),
            conversations=load_conversations()[:sample],
            pooled=pooled,
            note="development categories (every one but `live_*`)",
        )
    if name == "apibench":
        bench = apibench.load()
        return DevSet(
            "apibench",
            "Gorilla APIBench",
            bench.functions,
            _every(sample, bench.questions),
            note=f"instructions of the three hubs ({bench.unmatched} whose answer matches no catalog API left out); "
            "description = `domain. functionality. description`",
        )
    if name == "sealtools":
        seal = sealtools.load()
        several = sum(len(q.expected) > 1 for q in seal.questions)
        return DevSet(
            "sealtools",
            "Seal-Tools",
            seal.functions,
            _every(sample, seal.questions),
            note=f"development split ({several} of {len(seal.questions)} requests need several tools)",
        )
    raise ValueError(f"unknown set {name!r}; choose from {', '.join(SETS)}")


def _every(sample: int | None, items: Sequence[BfclQuestion]) -> list[BfclQuestion]:
    # A sample spread over the whole set, so every category or hub is in it.
    if sample is None or sample >= len(items):
        return list(items)
    step = len(items) / sample
    return [items[int(i * step)] for i in range(sample)]
