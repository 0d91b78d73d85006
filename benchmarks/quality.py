"""Retrieval quality on BFCL: the router beside the peers' methods, same model, same run.

``python -m benchmarks.quality`` (``make bench-quality``). The catalog is every BFCL function
deduplicated by name (1,998), indexed through ``CatalogService.apply`` on a temporary
embedded data directory with the default settings; questions are routed through
``TurnRouter.route``. Development categories are everything but ``live_*``; the live ones are
held out and reported last, as a check. Measured, in order:

1. side by side on the development questions: Semantic Kernel's default, langgraph-bigtool's,
   BM25 over name and description (brute force, same ``Embedder``), and the router;
2. the fusion choice: dense only, lexical only, Qdrant's RRF and DBSF, the router's convex mix;
3. the router per category;
4. multi-turn (``multi_turn_base``): the new turn alone, the joined context, and the session's
   history fused with the new turn at several weights;
5. usage learning on a seeded 50/50 split of the development questions: the training half is
   stored as finished runs (``TurnRouter.record``), the test half routed before and after;
6. the held-out live questions, cold and after that learning.

Tables go to stdout and to ``benchmarks/RESULTS.md`` under "## Retrieval quality (make bench-quality)".
Nothing is cached between runs.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tqdm import tqdm

from benchmarks.bfcl import BfclQuestion, dedupe_by_name, load_functions, load_questions
from benchmarks.quality_baselines import Bm25Baseline, DenseBaseline, bigtool_text, semantic_kernel_text
from benchmarks.quality_data import Scores, Turn, load_conversations, score_all, split
from benchmarks.quality_limits import limits
from benchmarks.quality_report import Report, Table, choices, record, targets
from benchmarks.quality_runs import NAMESPACE, fusion_rankings, learn, multi_turn, route_questions, search_latency
from router.embedding import Embedder, Progress, Vectors
from router.routing import TurnRouter
from router.runtime import Runtime
from router.settings import Settings, StorageSettings

HEADING = "## Retrieval quality (make bench-quality)"
RESULTS = Path(__file__).with_name("RESULTS.md")
# Context on every turn (clear = 1: a new turn is never clear enough to go without it), or only
# on turns whose best similarity is below the clear mark (the router's way), at a few weights.
CONTEXT_VARIANTS: tuple[tuple[float, float, float], ...] = (
    (0.1, 0.99, 1.0),
    (0.3, 0.99, 1.0),
    (0.3, 0.2, 0.3),
    (0.5, 0.2, 0.3),
    (0.3, 0.3, 0.4),
)
LEXICAL_WEIGHTS = (0.0, 0.15, 0.25, 0.35, 1.0)
EXAMPLE_WEIGHTS = (0.6, 0.7, 0.8, 0.9, 1.0)
SK = "Semantic Kernel default (`Function name: X, description: Y`; last 2 + new joined)"
BIGTOOL = "langgraph-bigtool (`name: description`)"


def _bar(label: str, total: int) -> Progress:
    bar = tqdm(total=total, desc=label, file=sys.stderr, leave=False)

    def report(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return report


@dataclass
class Peers:
    """The baselines, built over the same catalog with the router's embedder."""

    embedder: Embedder
    sk: DenseBaseline
    bigtool: DenseBaseline
    bm25: Bm25Baseline

    def side_by_side(
        self, table: Table, questions: Sequence[BfclQuestion], vectors: Vectors, routed: dict[str, list[str]]
    ) -> Scores:
        """Add the three peers and the router on ``questions`` (embedded as ``vectors``); the router's scores."""
        ids = [q.id for q in questions]
        table.add(score_all(dict(zip(ids, self.sk.rank(vectors), strict=True)), questions), SK)
        table.add(score_all(dict(zip(ids, self.bigtool.rank(vectors), strict=True)), questions), BIGTOOL)
        table.add(
            score_all({q.id: self.bm25.rank(q.text) for q in questions}, questions), "BM25 over name + description"
        )
        return table.add(score_all(routed, questions), "**router (defaults)**")


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


async def measure(report: Report, *, sample: int | None = None) -> None:
    """Run every measurement on a temporary data directory, filling ``report``.

    Args:
        report: where the tables go.
        sample: keep only this many questions of each set and conversations (figures then are a
            quick look, not comparable with full runs).
    """
    started = time.perf_counter()
    pooled = load_functions()
    functions = [f.to_function_def() for f in dedupe_by_name(pooled)]
    questions = load_questions()
    dev = [q for q in questions if not q.held_out][:sample]
    live = [q for q in questions if q.held_out][:sample]
    conversations = load_conversations()[:sample]
    turns = [t for c in conversations for t in c.turns]
    with tempfile.TemporaryDirectory(prefix="bench-quality-") as tmp:
        runtime = Runtime(Settings(storage=StorageSettings(data=Path(tmp) / "data")), progress=_bar)
        await runtime.start()
        try:
            service, router = runtime.service, runtime.turns
            settings = router.settings

            def variant(**changes: float) -> TurnRouter:
                return TurnRouter(service, runtime.storage, settings.model_copy(update=changes))

            await service.apply(NAMESPACE, functions, source="bench")
            indexed = time.perf_counter() - started
            index = service.index
            embedder = index.embedder
            peers = Peers(
                embedder,
                DenseBaseline(embedder, functions, semantic_kernel_text, progress=_bar("SK texts", len(functions))),
                DenseBaseline(embedder, functions, bigtool_text, progress=_bar("bigtool texts", len(functions))),
                Bm25Baseline(functions),
            )
            routed = await route_questions(router, dev, "router, development")
            # The router embedded these very texts: its query cache hands the same vectors back.
            dev_vectors = await embedder.query([q.text for q in dev])
            title = f"Development categories ({len(dev):,} questions), catalog of {len(functions):,} functions"
            cold = peers.side_by_side(report.table(title), dev, dev_vectors, routed)

            limit = max(settings.candidates, 40)
            fusions = await asyncio.to_thread(
                fusion_rankings,
                index.store,
                dev,
                dev_vectors,
                limit=limit,
                weights=LEXICAL_WEIGHTS,
                example_weight=settings.example_weight,
            )
            table = report.table(
                "Fusion choice (development; the router's candidates for one query vector)",
                note=f"`convex a` is the router's `hybrid` with lexical weight a (0 = dense only, 1 = BM25 only); "
                f"the Qdrant fusions prefetch {limit} of each vector. Defaults: a = {settings.lexical_weight:g}.",
            )
            fusion_scores = {m: table.add(score_all(r, dev), m) for m, r in sorted(fusions.items())}
            latency = await asyncio.to_thread(
                search_latency,
                index.store,
                dev,
                dev_vectors,
                limit=limit,
                lexical_weight=settings.lexical_weight,
                example_weight=settings.example_weight,
            )
            table.note += (
                " Per question, query vector given: "
                + "; ".join(f"{k} p50 {p50:.1f} ms, p95 {p95:.1f} ms" for k, (p50, p95) in latency.items())
                + " (the query encoding, ~16 ms, is the same for both)."
            )
            table = report.table("Router per category (development)", lead=("category",))
            for category in sorted({q.category for q in dev}):
                table.add(score_all(routed, [q for q in dev if q.category == category]), category)

            default = (settings.context_weight, settings.context_vague, settings.context_clear)
            chosen = _context_label(*default)
            routers = {
                _context_label(*v): variant(context_weight=v[0], context_vague=v[1], context_clear=v[2])
                for v in dict.fromkeys((*CONTEXT_VARIANTS, default))
            }
            rows = await multi_turn(routers, conversations, recent=settings.recent_messages)
            joined = [
                "\n".join(t.text for t in c.turns[max(0, i - 2) : i + 1])
                for c in conversations
                for i in range(len(c.turns))
            ]
            table = report.table(
                f"Multi-turn (`multi_turn_base`: {len(conversations)} conversations, turns with a call)",
                note="History = the session's earlier user turns, stored with `record`, read back by `route` "
                f"(last {settings.recent_messages}), fused as (s_new + w s_recent) / (1 + w), w scaled down "
                "to 0 as the new turn's best similarity rises from the full-weight mark to the clear mark. "
                f"Default: {chosen}.",
            )
            alone = table.add(_turns(rows.pop("alone"), turns), "router, new turn alone")
            joined_scores = table.add(_turns(rows.pop("joined"), turns), "router, last 2 + new turn joined (one query)")
            with_history = {label: table.add(_turns(r, turns), f"router, {label}") for label, r in rows.items()}
            table.add(_turns(peers.sk.rank(await embedder.query(joined)), turns), SK)
            table.add(
                _turns(peers.bigtool.rank(await embedder.query([t.text for t in turns])), turns), BIGTOOL + ", new turn"
            )

            train, test = split(dev)
            before = score_all(routed, test)
            await learn(router, train)
            examples = index.store.examples.count(NAMESPACE) if index.store.examples is not None else 0
            table = report.table(
                f"Usage learning (development, seeded 50/50 split: {len(train)} questions stored as runs, "
                f"{len(test)} routed)",
                note=f"{examples:,} usage examples kept. b weighs an example's similarity against the function's "
                f"own. Default b = {settings.example_weight:g}.",
            )
            table.add(before, "router, cold (no examples)")
            by_weight: dict[str, Scores] = {}
            for weight in EXAMPLE_WEIGHTS:
                ranked = await route_questions(variant(example_weight=weight), test, f"learned, b={weight:g}")
                label = f"b={weight:g}"
                by_weight[label] = table.add(
                    score_all(ranked, test), f"router, learned from the training half, {label}"
                )
            example = f"b={settings.example_weight:g}"
            learned = by_weight[example]

            live_cold = await route_questions(variant(learn_from_usage=False), live, "router, live (cold)")
            live_learned = await route_questions(router, live, "router, live (learned)")
            table = report.table(
                f"Held-out live categories ({len(live):,} questions): final check, nothing tuned on them"
            )
            live_vectors = await embedder.query([q.text for q in live])
            live_scores = peers.side_by_side(table, live, live_vectors, live_cold)
            table.add(score_all(live_learned, live), "router, after learning from the development training half")
            report.notes += ["**Targets**", "", *targets(cold, learned, alone, with_history, chosen), ""]
            lexical = f"convex a={settings.lexical_weight:g}"
            report.notes += choices(
                fusion_scores, lexical, alone, joined_scores, with_history, chosen, by_weight, example
            )
            called = {name for q in train for name in q.expected}
            unseen = sum(not called.intersection(q.expected) for q in test) / len(test)
            report.notes += limits(dev, pooled, routed, peers.bigtool, cold, live_scores, unseen)
            report.header = [
                f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {_machine()}; whole run "
                f"{time.perf_counter() - started:.0f} s (catalog indexed in {indexed:.0f} s).",
                "Command: `.venv/bin/python -m benchmarks.quality` (what `make bench-quality` runs).",
                f"Model `{embedder.model_name}`; router defaults: text template `{index.generation.text}`, "
                f"lexical weight a = {settings.lexical_weight:g}, example weight b = {settings.example_weight:g}, "
                f"context weight w = {settings.context_weight:g} (fading to 0 as the new turn's best similarity rises "
                f"from {settings.context_vague:g} to {settings.context_clear:g}), candidates {settings.candidates} per "
                "signal. "
                "R@k counts a question when any function it expects is in the top k (by name); Complete@10 "
                "asks for all of them (multi-function questions only).",
            ]
        finally:
            await runtime.stop()


def _machine() -> str:
    import os

    return f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}, CPU only"


def main(argv: Sequence[str] | None = None) -> None:
    """Measure, print the tables and record them."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.quality", description="Retrieval quality on BFCL.")
    parser.add_argument("--results", type=Path, default=RESULTS, help="results file to update")
    parser.add_argument("--no-record", action="store_true", help="print only; leave the results file alone")
    parser.add_argument(
        "--sample",
        type=int,
        default=None,
        help="route only this many questions and conversations per set (a quick look)",
    )
    args = parser.parse_args(argv)
    report = Report()
    asyncio.run(measure(report, sample=args.sample))
    body = report.markdown()
    print(body)
    if not args.no_record:
        record(args.results, HEADING, body)


if __name__ == "__main__":
    main()
