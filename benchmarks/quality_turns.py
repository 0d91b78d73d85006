"""Multi-turn (BFCL ``multi_turn_base``): the peers on the new turn, the router cold and learned, and vague turns.

Every turn with a call is ranked by the peers (Semantic Kernel on the last two turns and the new
one joined; dense ``name: description``, BM25 and the per-sentence reference on the new turn),
and by the router: on the new turn alone, on the last turns sent with it as one turn, with the
session's history (its way, cold), and with history after the BFCL training half was stored
(learned). Follow-ups are measured on their own: the vague turns, whose new turn's best
similarity to any function (the router's dense search, cold) is below the router's vague mark,
where the context counts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from benchmarks.quality_data import Scores, Turn
from benchmarks.quality_report import SUMMARY, Report
from benchmarks.quality_runs import multi_turn
from benchmarks.quality_targets import cold_targets
from router.routing.turns import TurnRouter
from router.server.runtime import Runtime

if TYPE_CHECKING:
    from benchmarks.quality import Peers
    from benchmarks.quality_sets import DevSet

# Context on every turn (vague = 1: every turn is vague enough), or only on turns whose best
# similarity is below the vague mark (the router's way).
CONTEXT_VARIANTS: tuple[tuple[float, float], ...] = ((0.3, 1.0),)
LEARNED = "**router, learned** (history; BFCL training half stored)"
SENT_TOGETHER = "router, last 2 + new turn sent as one turn (routed as their parts)"


def _context_label(weight: float, vague: float) -> str:
    if vague >= 1.0:
        return f"history on every turn, w={weight:g}"
    return f"history when the new turn's best similarity < {vague:g}, w={weight:g}"


def _turns(rows: Sequence[Sequence[str]], turns: Sequence[Turn], keep: Sequence[bool] | None = None) -> Scores:
    scores = Scores()
    for i, (ranked, turn) in enumerate(zip(rows, turns, strict=True)):
        if turn.expected and (keep is None or keep[i]):
            scores.add(ranked, turn.expected)
    return scores


async def multi_turn_tables(report: Report, runtime: Runtime, data: DevSet, peers: Peers) -> None:
    """The multi-turn table, its targets, and the vague turns' table."""
    from benchmarks.quality import BIGTOOL, BM25, PER_SENTENCE, SK

    settings = runtime.turns.settings
    index = runtime.service.index
    namespace = data.name
    conversations = data.conversations
    turns = [t for c in conversations for t in c.turns]

    def variant(**changes: float | bool) -> TurnRouter:
        return TurnRouter(runtime.catalogs, settings.model_copy(update=changes))

    default = (settings.context_weight, settings.context_vague)
    chosen = _context_label(*default)
    quiet = {"learn_from_usage": False}
    # The first router also routes the new turn alone and the turns sent as one: the defaults.
    routers = {
        _context_label(*v): variant(context_weight=v[0], context_vague=v[1], **quiet)
        for v in dict.fromkeys((default, *CONTEXT_VARIANTS))
    }
    routers[LEARNED] = runtime.turns
    rows = await multi_turn(routers, conversations, recent=settings.recent_messages, namespace=namespace)
    joined = [
        "\n".join(t.text for t in c.turns[max(0, i - 2) : i + 1]) for c in conversations for i in range(len(c.turns))
    ]
    texts = [t.text for t in turns]
    vectors = await peers.embedder.query(texts)
    table = report.table(
        f"BFCL: multi-turn (`multi_turn_base`: {len(conversations)} conversations, turns with a call)",
        columns=SUMMARY,
        note="History = the session's earlier user turns, stored with `record`, read back by `route` "
        f"(last {settings.recent_messages}), weighted by the router's context rule. Default: {chosen}. "
        "Cold routers store no usage examples (the sessions' own calls are not stored); the learned one "
        "routes after the BFCL training half was stored (no multi-turn run).",
    )
    table.add(_turns(peers.sk.rank(await peers.embedder.query(joined)), turns), SK)
    dense = table.add(_turns(peers.bigtool.rank(vectors), turns), BIGTOOL + ", new turn")
    lexical = table.add(_turns([peers.bm25.rank(t) for t in texts], turns), BM25 + ", new turn")
    split = table.add(_turns(await peers.sentences.rank(texts), turns), PER_SENTENCE + ", new turn")
    alone_rows, joined_rows = rows.pop("alone"), rows.pop("joined")
    alone = table.add(_turns(alone_rows, turns), "router, new turn alone")
    table.add(_turns(joined_rows, turns), SENT_TOGETHER)
    learned_rows = rows.pop(LEARNED)
    labelled = {label: table.add(_turns(r, turns), f"router, {label}") for label, r in rows.items()}
    table.add(_turns(learned_rows, turns), LEARNED)
    history = labelled[chosen]
    title = "BFCL multi-turn"
    report.notes += cold_targets(
        "multi_turn_base", title, {BIGTOOL: dense, BM25: lexical, PER_SENTENCE: split}, history
    )
    steady = all(history.recall(k) >= alone.recall(k) for k in (1, 3, 5, 10))
    report.notes.append(
        f"- {title}: with history ({chosen}) R@1 {history.recall(1):.3f}, R@5 {history.recall(5):.3f} "
        f"against the new turn alone R@1 {alone.recall(1):.3f}, R@5 {alone.recall(5):.3f}: "
        + ("never worse at R@1, R@3, R@5, R@10 (met)." if steady else "**worse at some k (not met)**.")
    )

    # The new turn's best similarity, as the router's context rule reads it (cold: no usage examples).
    store = index.store
    best = [
        hits[0].score if (hits := await asyncio.to_thread(store.search, namespace, v.tolist(), limit=1)) else 0.0
        for v in vectors
    ]
    marks = ((f"below the vague mark {settings.context_vague:g} (context counts)", settings.context_vague),)
    called = [bool(t.expected) for t in turns]
    table = report.table(
        "BFCL: multi-turn, vague turns on their own (the new turn's best cosine to any function is low)",
        lead=("turns", "method"),
        columns=SUMMARY,
        note=f"{sum(called):,} turns with a call; best cosine = the router's dense search of the new turn, cold.",
    )
    for label, mark in marks:
        keep = [b < mark for b in best]
        lead = f"{sum(k and c for k, c in zip(keep, called, strict=True)):,} {label}"
        table.add(_turns(alone_rows, turns, keep), lead, "router, new turn alone")
        table.add(_turns(joined_rows, turns, keep), lead, SENT_TOGETHER)
        table.add(_turns(rows[chosen], turns, keep), lead, f"router with context, {chosen}")
        table.add(_turns(learned_rows, turns, keep), lead, LEARNED)
