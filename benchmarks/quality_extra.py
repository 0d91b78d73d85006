"""The set-specific parts of the quality benchmark.

- ``bfcl_extras``: the router per category, multi-turn (``multi_turn_base``) and the held-out
  live categories (cold and after learning), a final check never tuned on.
- ``bounding``: what bounding the usage examples per function costs, on a set with many
  requests per function: the latest ``cap`` against the router's rule (near-duplicates merge;
  at the cap a new request replaces the kept one nearest to it), ranked by the
  nearest-example baseline so that only the kept examples differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from benchmarks.bfcl import BfclQuestion
from benchmarks.quality_data import Scores, Turn, score_all
from benchmarks.quality_learning import keep, nearest_example
from benchmarks.quality_limits import limits
from benchmarks.quality_report import Report
from benchmarks.quality_runs import multi_turn, route_questions
from router.embedding import Vectors
from router.evaluate.peers import DenseBaseline
from router.retrieval.examples import MAX_EXAMPLES
from router.routing.turns import TurnRouter
from router.server.runtime import Runtime

if TYPE_CHECKING:
    from benchmarks.quality import Peers
    from benchmarks.quality_sets import DevSet


CAPS = (1, 4, 16, 64, 256)
# Context on every turn (clear = 1: a new turn is never clear enough to go without it), or only
# on turns whose best similarity is below the clear mark (the router's way).
CONTEXT_VARIANTS: tuple[tuple[float, float, float], ...] = ((0.3, 0.99, 1.0),)


def _context_label(weight: float, vague: float, clear: float) -> str:
    if clear >= 1.0:
        return f"history on every turn, w={weight:g}"
    return f"history when the new turn's best similarity < {clear:g} (full below {vague:g}), w={weight:g}"


def _turns(rows: Sequence[Sequence[str]], turns: Sequence[Turn]) -> Scores:
    scores = Scores()
    for ranked, turn in zip(rows, turns, strict=True):
        if turn.expected:
            scores.add(ranked, turn.expected)
    return scores


async def bfcl_extras(
    report: Report, runtime: Runtime, data: DevSet, peers: Peers, routed: dict[str, list[str]], cold: Scores
) -> None:
    """Per category, multi-turn and the held-out live questions (after the learning steps ran)."""
    from benchmarks.quality import BIGTOOL, SK

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

    conversations = data.conversations
    turns = [t for c in conversations for t in c.turns]
    default = (settings.context_weight, settings.context_vague, settings.context_clear)
    chosen = _context_label(*default)
    quiet = {"learn_from_usage": False}
    routers = {
        _context_label(*v): variant(context_weight=v[0], context_vague=v[1], context_clear=v[2], **quiet)
        for v in dict.fromkeys((*CONTEXT_VARIANTS, default))
    }
    rows = await multi_turn(routers, conversations, recent=settings.recent_messages, namespace=namespace)
    joined = [
        "\n".join(t.text for t in c.turns[max(0, i - 2) : i + 1]) for c in conversations for i in range(len(c.turns))
    ]
    table = report.table(
        f"BFCL: multi-turn (`multi_turn_base`: {len(conversations)} conversations, turns with a call)",
        note="History = the session's earlier user turns, stored with `record`, read back by `route` "
        f"(last {settings.recent_messages}), fused as (s_new + w s_recent) / (1 + w), w scaled down "
        "to 0 as the new turn's best similarity rises from the full-weight mark to the clear mark, and by "
        "(best_recent - best_new) / best_new (the recent query's best match against the new turn's, full from "
        f"twice as good). Default: {chosen}. "
        "Routed without usage examples (the sessions' own calls are not stored).",
    )
    alone = table.add(_turns(rows.pop("alone"), turns), "router, new turn alone")
    table.add(_turns(rows.pop("joined"), turns), "router, last 2 + new turn joined (one query)")
    with_history = {label: table.add(_turns(r, turns), f"router, {label}") for label, r in rows.items()}
    table.add(_turns(peers.sk.rank(await embedder.query(joined)), turns), SK)
    table.add(_turns(peers.bigtool.rank(await embedder.query([t.text for t in turns])), turns), BIGTOOL + ", new turn")
    history = with_history[chosen]
    steady = all(history.recall(k) >= alone.recall(k) for k in (1, 3, 5, 10))
    report.notes += [
        f"- BFCL multi-turn: with history ({chosen}) R@1 {history.recall(1):.3f}, R@5 {history.recall(5):.3f} "
        f"against the new turn alone R@1 {alone.recall(1):.3f}, R@5 {alone.recall(5):.3f}: "
        + ("never worse at R@1, R@3, R@5, R@10 (met)." if steady else "**worse at some k (not met)**."),
    ]

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
