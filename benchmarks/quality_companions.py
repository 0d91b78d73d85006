"""Companions (functions that runs call together), measured where runs repeat their pairs.

The single requests of the development sets rarely share a pair of functions: no pair of
BFCL's training half recurs and one of Seal-Tools' 912 does, so no companion forms there. The
turns of BFCL's multi-turn conversations do (a file system's ``cd`` then ``ls``): a seeded half
of the ``multi_turn_base`` conversations is stored as runs, each turn with a call one finished
run of its calls, in a copy of the catalog; the other half's turns are then routed, the new
turn alone, with companions off (the default) and on.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from typing import TYPE_CHECKING

from benchmarks.bfcl import BfclQuestion
from benchmarks.quality_data import Conversation, score_all, split
from benchmarks.quality_report import SUMMARY, Report
from benchmarks.quality_runs import learn, route_questions
from router.retrieval.companions import MIN_RUNS
from router.routing.turns import TurnRouter
from router.server.runtime import Runtime

if TYPE_CHECKING:
    from benchmarks.quality_sets import DevSet


def _turns(conversations: list[Conversation]) -> list[BfclQuestion]:
    """Each turn with a call as a request of its own."""
    return [
        BfclQuestion(f"{c.id}-{i}", "multi_turn_base", ({"role": "user", "content": t.text},), t.expected)
        for c in conversations
        for i, t in enumerate(c.turns)
        if t.expected
    ]


async def companions_table(report: Report, runtime: Runtime, data: DevSet) -> None:
    """The other half's turns routed with companions off and on, after half the conversations were stored."""
    namespace = f"{data.name}-companions"
    await runtime.service.apply(namespace, list(data.functions), source="bench")
    try:
        train, test = split(data.conversations)
        stored, routed = _turns(train), _turns(test)
        await learn(runtime.turns, stored, namespace=namespace)
        pairs = Counter(p for q in stored for p in combinations(sorted(set(q.expected)), 2))
        table = report.table(
            f"BFCL: companions (`multi_turn_base`: {len(stored):,} turns of {len(train)} conversations stored as "
            f"runs, {len(routed):,} turns of the other {len(test)} routed)",
            columns=SUMMARY,
            note="Each routed turn is the new turn alone, with usage examples from the stored runs either way. "
            f"The stored turns called {len(pairs):,} pairs of functions together, "
            f"{sum(n >= MIN_RUNS for n in pairs.values()):,} of them in {MIN_RUNS} runs or more (a companion "
            "needs that many).",
        )
        for on in (False, True):
            router = TurnRouter(runtime.catalogs, runtime.turns.settings.model_copy(update={"companions": on}))
            ranked = await route_questions(router, routed, f"companions {'on' if on else 'off'}", namespace=namespace)
            table.add(score_all(ranked, routed), "router, learned, companions " + ("on" if on else "off (default)"))
    finally:
        await runtime.service.remove(namespace)
