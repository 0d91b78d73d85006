"""The set-specific parts of the quality benchmark.

- ``bfcl_extras``: the router per category, multi-turn (``multi_turn_base``, in
  ``benchmarks.quality_turns``) and the held-out live categories (cold and after learning), a
  final check never tuned on.
- ``bounding``: what bounding the usage examples per function costs, on a set with many
  requests per function: the latest ``cap`` against the router's rule (near-duplicates merge;
  at the cap a new request replaces the kept one nearest to it), ranked by the
  nearest-example baseline so that only the kept examples differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from benchmarks.bfcl import BfclQuestion
from benchmarks.quality_companions import companions_table
from benchmarks.quality_data import Scores, score_all
from benchmarks.quality_learning import keep, nearest_example
from benchmarks.quality_limits import limits
from benchmarks.quality_report import Report
from benchmarks.quality_runs import route_questions
from benchmarks.quality_turns import multi_turn_tables
from router.embedding import Vectors
from router.evaluate.peers import DenseBaseline
from router.retrieval.examples import MAX_EXAMPLES
from router.routing.turns import TurnRouter
from router.server.runtime import Runtime

if TYPE_CHECKING:
    from benchmarks.quality import Peers
    from benchmarks.quality_sets import DevSet


CAPS = (1, 4, 16, 64, 256)


async def bfcl_extras(
    report: Report, runtime: Runtime, data: DevSet, peers: Peers, routed: dict[str, list[str]], cold: Scores
) -> None:
    """Per category, multi-turn and the held-out live questions (after the learning steps ran)."""
    service, router = runtime.service, runtime.turns
    settings = router.settings
    embedder = service.index.embedder
    namespace = data.name
    dev = data.dev
    table = report.table("BFCL: router per category (development, cold)", lead=("category",))
    for category in sorted({q.category for q in dev}):
        table.add(score_all(routed, [q for q in dev if q.category == category]), category)

    def variant(**changes: float | bool) -> TurnRouter:
        return TurnRouter(runtime.catalogs, settings.model_copy(update=changes))

    await multi_turn_tables(report, runtime, data, peers)
    await companions_table(report, runtime, data)

    live = data.live
    live_cold = await route_questions(variant(learn_from_usage=False), live, "bfcl live cold", namespace=namespace)
    live_learned = await route_questions(router, live, "bfcl live learned", namespace=namespace)
    table = report.table(
        f"BFCL: held-out live categories ({len(live):,} questions): final check, nothing tuned on them"
    )
    live_vectors = await embedder.query([q.text for q in live])
    _, _, _, live_scores = await peers.side_by_side(table, live, live_vectors, live_cold)
    learned = table.add(score_all(live_learned, live), "router, after learning from the development training half")
    steady = all(learned.recall(k) >= live_scores.recall(k) for k in (1, 5))
    report.notes.append(
        f"- BFCL live: after learning R@1 {learned.recall(1):.3f}, R@5 {learned.recall(5):.3f} against cold "
        f"R@1 {live_scores.recall(1):.3f}, R@5 {live_scores.recall(5):.3f}: "
        + ("not worse (met)." if steady else "**worse (not met)**.")
    )
    report.notes += ["", *limits(dev, data.pooled, routed, peers.bigtool, cold, live_scores), ""]


def bounding(
    report: Report,
    title: str,
    train: Sequence[BfclQuestion],
    train_vectors: Vectors,
    test: Sequence[BfclQuestion],
    test_vectors: Vectors,
    names: DenseBaseline,
) -> None:
    """Latest-k against the router's rule, at a few caps, ranked by the nearest-example baseline."""
    table = report.table(
        f"{title}: bounded usage examples (the whole training half stored; nearest-example ranking of the test half)",
        lead=("examples kept per function", "rule"),
        note="`latest` keeps a function's most recent requests; `merge` is the router's rule: a request within "
        "cosine 0.95 of a kept one adds nothing, and at the cap a new request replaces the kept one nearest to it. "
        f"The router keeps at most {MAX_EXAMPLES} per function.",
    )
    ids = [q.id for q in test]
    for cap in (*CAPS, None):
        for rule in ("latest", "merge") if cap is not None else ("merge",):
            kept = keep(train, train_vectors, cap=cap, rule=rule)
            rows = nearest_example(names.names, names.vectors, test_vectors, kept, train_vectors)
            table.add(
                score_all(dict(zip(ids, rows, strict=True)), test),
                "unbounded" if cap is None else f"<= {cap}",
                f"{rule} ({len(kept):,} kept)",
            )
