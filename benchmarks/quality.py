"""Retrieval quality on every development set: the router beside the peers' methods, same model, same run.

``python -m benchmarks.quality`` (``make bench-quality``). Each set (``benchmarks.quality_sets``:
BFCL, Gorilla APIBench and Seal-Tools dev) is indexed in its own namespace through
``CatalogService.apply`` on a temporary embedded data directory with the default settings;
requests are routed through ``TurnRouter.route``. Measured per set, in order:

1. the summary: Semantic Kernel's default, langgraph-bigtool's (dense ``name: description``),
   BM25 over name and description, the per-sentence reference (dense per sentence,
   interleaved), the router cold; then, on the test half of a seeded 50/50 split, the router
   cold, learned (the whole training half stored as runs) and learned from noisy runs;
2. the fusion choice: the router's fixed convex mix beside other lexical weights, RRF and DBSF as Qdrant fuses;
3. usage learning in growing steps: the training half is stored as finished runs
   (``TurnRouter.record``), and after each step the test half is routed and ranked by the
   plain nearest-example baseline over the same stored requests;
4. noisy usage (``benchmarks.quality_noisy``): the training half stored again in a copy of the
   catalog with a tenth of the runs calling a wrong function, and the share of the learned gain kept;
5. (BFCL) the router per category, multi-turn (``multi_turn_base``, with its vague turns on
   their own) and the held-out live questions, cold and after learning: a final check, never tuned on;
6. (APIBench) how bounding the examples per function costs, latest-k against the router's rule.

The issue's targets (``benchmarks.quality_targets``) are printed per set, each met or not.

Then follow-ups on the example catalog (``benchmarks.quality_followups``) and requests in seven
languages (``benchmarks.quality_languages``).
Tables go to stdout and to ``benchmarks/RESULTS.md`` under "## Retrieval quality (make bench-quality)",
with the harness's header. Nothing is cached between runs.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks import quality_followups as followups
from benchmarks import quality_languages as languages
from benchmarks.bfcl import BfclQuestion
from benchmarks.harness import Header, progress, record
from benchmarks.quality_data import Scores, score_all, split
from benchmarks.quality_extra import bfcl_extras, bounding
from benchmarks.quality_learning import nearest_example
from benchmarks.quality_noisy import noisy_pass, reuse_catalog_vectors
from benchmarks.quality_report import SUMMARY, Report, Table
from benchmarks.quality_runs import fusion_rankings, learn, route_questions
from benchmarks.quality_sets import SETS, DevSet, load_set
from benchmarks.quality_targets import cold_targets, learned_targets, noisy_targets
from router.embedding import Embedder, Vectors
from router.evaluate.peers import (
    Bm25Baseline,
    DenseBaseline,
    PerSentenceBaseline,
    bigtool_text,
    semantic_kernel_text,
)
from router.routing.turns import TurnRouter
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings

HEADING = "## Retrieval quality (make bench-quality)"
LEXICAL_WEIGHTS = (0.0, 0.15, 0.25, 0.35, 1.0)
# Shares of the training half stored before each learned measurement.
STEPS = (0.1, 0.25, 0.5, 1.0)
SK = "Semantic Kernel default (`Function name: X, description: Y`; last 2 + new joined)"
BIGTOOL = "langgraph-bigtool (`name: description`)"
BM25 = "BM25 over name + description"
PER_SENTENCE = "dense per sentence, interleaved (`name: description`)"


@dataclass
class Peers:
    """The baselines, built over one catalog with the router's embedder."""

    embedder: Embedder
    sk: DenseBaseline
    bigtool: DenseBaseline
    bm25: Bm25Baseline
    sentences: PerSentenceBaseline

    async def side_by_side(
        self, table: Table, questions: Sequence[BfclQuestion], vectors: Vectors, routed: dict[str, list[str]]
    ) -> tuple[Scores, Scores, Scores, Scores]:
        """Add the four peers and the router; returns (bigtool, BM25, per sentence, router) scores."""
        ids = [q.id for q in questions]
        table.add(score_all(dict(zip(ids, self.sk.rank(vectors), strict=True)), questions), SK)
        dense = table.add(score_all(dict(zip(ids, self.bigtool.rank(vectors), strict=True)), questions), BIGTOOL)
        lexical = table.add(score_all({q.id: self.bm25.rank(q.text) for q in questions}, questions), BM25)
        split = await self.sentences.rank([q.text for q in questions])
        sentences = table.add(score_all(dict(zip(ids, split, strict=True)), questions), PER_SENTENCE)
        return dense, lexical, sentences, table.add(score_all(routed, questions), "**router, cold (defaults)**")


async def measure_set(report: Report, runtime: Runtime, data: DevSet) -> None:
    """Every measurement of one set, in its own namespace."""
    service, settings = runtime.service, runtime.turns.settings
    namespace = data.name
    await service.apply(namespace, data.functions, source="bench")
    index = service.index
    embedder = index.embedder
    n = len(data.functions)
    bigtool = DenseBaseline(embedder, data.functions, bigtool_text, progress=progress(f"{namespace} bigtool texts", n))
    peers = Peers(
        embedder,
        DenseBaseline(embedder, data.functions, semantic_kernel_text, progress=progress(f"{namespace} SK texts", n)),
        bigtool,
        Bm25Baseline(data.functions),
        PerSentenceBaseline(bigtool, embedder),
    )
    dev = data.dev
    cold_router = TurnRouter(runtime.catalogs, settings.model_copy(update={"learn_from_usage": False}))
    routed = await route_questions(cold_router, dev, f"{namespace} cold", namespace=namespace)
    # The router embedded these very texts: its query cache hands the same vectors back.
    vectors = await embedder.query([q.text for q in dev])
    summary = report.table(
        f"{data.title}: {data.note} ({len(dev):,} requests), catalog of {n:,} functions",
        columns=SUMMARY,
        note="Peers and the router cold rank every request; the learned rows rank the test half of the seeded "
        "50/50 split after the whole training half was stored as runs (beside the router cold on the same half).",
    )
    dense, lexical, sentences, cold = await peers.side_by_side(summary, dev, vectors, routed)
    await fusion_table(report, runtime, data, vectors)

    train, test = split(dev)
    train_vectors = await embedder.query([q.text for q in train])
    test_vectors = await embedder.query([q.text for q in test])
    cold_test = score_all(routed, test)
    steps = await learning_steps(report, runtime, data, peers, (train, train_vectors), (test, test_vectors), cold_test)
    clean = steps[-1][1]
    summary.add(cold_test, "router, cold (test half)")
    summary.add(clean, "**router, learned** (test half)")
    noisy, wrong = await noisy_pass(runtime, namespace, data.functions, train, train_vectors, test, peers.bigtool)
    summary.add(noisy, f"router, learned with {wrong:,} of {len(train):,} runs wrong (test half)")
    report.notes += cold_targets(data.name, data.title, {BIGTOOL: dense, BM25: lexical, PER_SENTENCE: sentences}, cold)
    report.notes += learned_targets(data.title, steps, cold_test=cold_test)
    report.notes += noisy_targets(data.title, cold_test, clean, noisy, wrong=wrong, stored=len(train))
    if data.name == "bfcl":
        await bfcl_extras(report, runtime, data, peers, routed, cold)
    elif data.name == "apibench":
        bounding(report, data.title, train, train_vectors, test, test_vectors, peers.bigtool)


async def fusion_table(report: Report, runtime: Runtime, data: DevSet, vectors: Vectors) -> None:
    """The router's fusion beside fixed convex mixes, RRF and DBSF, on the same candidates."""
    settings = runtime.turns.settings
    limit = max(settings.candidates, 40)
    fusions = await asyncio.to_thread(
        fusion_rankings,
        runtime.service.index.store,
        data.dev,
        vectors,
        limit=limit,
        weights=LEXICAL_WEIGHTS,
        example_weight=settings.example_weight,
        namespace=data.name,
    )
    table = report.table(
        f"{data.title}: fusion choice (the router's candidates for one query vector, no usage examples)",
        note="`convex a` mixes the cosine and the relative BM25 score with a fixed lexical weight a (0 = dense "
        f"only, 1 = BM25 only); RRF (k = 60) and DBSF (scores scaled by mean +- 3 std) fuse the {limit} best of "
        "the candidates' dense and sparse rankings, as Qdrant defines them.",
    )
    for method, ranked in sorted(fusions.items()):
        table.add(score_all(ranked, data.dev), method)


async def learning_steps(
    report: Report,
    runtime: Runtime,
    data: DevSet,
    peers: Peers,
    training: tuple[list[BfclQuestion], Vectors],
    testing: tuple[list[BfclQuestion], Vectors],
    cold_test: Scores,
) -> list[tuple[str, Scores, Scores]]:
    """Store the training half in growing steps, ranking the test half after each.

    After each step, the router and the nearest-example baseline rank the test half.

    Returns each step's label, the router's scores and the baseline's.
    """
    (train, train_vectors), (test, test_vectors) = training, testing
    router, namespace = runtime.turns, data.name
    table = report.table(
        f"{data.title}: usage learning (seeded 50/50 split by request: up to {len(train):,} stored as runs, "
        f"{len(test):,} routed)",
        lead=("stored runs", "method"),
        note="Nearest-example baseline: a function scores max(cosine of the request to its `name: description`, "
        "0.9 x cosine to its closest stored request), numpy over the same stored requests, no lexical part. "
        "Runs per function counts the functions the stored runs called.",
    )
    table.add(cold_test, "0", "router, cold")
    ids = [q.id for q in test]
    table.add(score_all(dict(zip(ids, peers.bigtool.rank(test_vectors), strict=True)), test), "0", BIGTOOL)
    stored = 0
    steps: list[tuple[str, Scores, Scores]] = []
    for share in STEPS:
        upto = int(len(train) * share)
        await learn(router, train[stored:upto], namespace=namespace)
        stored = upto
        called = {name for q in train[:upto] for name in q.expected}
        calls = sum(len(q.expected) for q in train[:upto])
        label = f"{upto:,} ({calls / max(1, len(called)):.1f} per called function)"
        ranked = await route_questions(router, test, f"{namespace} learned {share:g}", namespace=namespace)
        learned = table.add(score_all(ranked, test), label, "**router, learned**")
        examples = [(name, row) for row, q in enumerate(train[:upto]) for name in q.expected]
        rows = nearest_example(peers.bigtool.names, peers.bigtool.vectors, test_vectors, examples, train_vectors)
        baseline = table.add(score_all(dict(zip(ids, rows, strict=True)), test), label, "nearest-example baseline")
        steps.append((label, learned, baseline))
    kept = runtime.service.index.store.examples.count(namespace)
    table.note += f" {kept:,} usage examples kept after the last step."
    return steps


async def measure(report: Report, sets: Sequence[str], *, sample: int | None = None) -> None:
    """Run every measurement of ``sets`` on a temporary data directory, filling ``report``."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-quality-") as tmp:
        runtime = Runtime(Settings(storage=StorageSettings(data=Path(tmp) / "data")), progress=progress)
        await runtime.start()
        reuse_catalog_vectors(runtime.service.index.embedder)
        try:
            for name in sets:
                await measure_set(report, runtime, load_set(name, sample=sample))
            await followups.measure(report)
            await languages.measure(report)
            settings = runtime.turns.settings
            index = runtime.service.index
            report.header = [
                f"Whole run {time.perf_counter() - started:.0f} s."
                + (f" **Sample of {sample} per set.**" if sample else ""),
                f"Model `{index.embedder.model_name}`; router defaults: text template `{index.generation.text}`, "
                f"lexical share a = {settings.lexical_weight:g}, example weight b = {settings.example_weight:g}, "
                f"context weight w = {settings.context_weight:g} for a turn whose best similarity is under "
                f"{settings.context_vague:g}, a turn's parts taking turns in the top-N, "
                f"candidates {settings.candidates} per signal. "
                "R@k counts a request when any function it expects is in the top k (by name); Complete@k "
                "asks for all of them in the top k (multi-function requests only).",
            ]
        finally:
            await runtime.stop()


def main(argv: Sequence[str] | None = None) -> None:
    """Measure, print the tables and record them."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.quality", description="Retrieval quality per set.")
    parser.add_argument("--no-record", action="store_true", help="print only; leave the results file alone")
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated sets (default {','.join(SETS)})")
    parser.add_argument(
        "--sample", type=int, default=None, help="route only this many requests per set (a quick look; not recorded)"
    )
    args = parser.parse_args(argv)
    sets = [s for s in args.sets.split(",") if s]
    header, report = Header.begin("benchmarks.quality", argv), Report()
    try:
        asyncio.run(measure(report, sets, sample=args.sample))
    except BaseException:
        # What was measured before a failure is still worth reading.
        print(report.markdown(), file=sys.stderr)
        raise
    body = report.markdown()
    print(f"{header.finish().markdown(timed=False)}\n\n{body}")
    if not args.no_record and args.sample is None and list(sets) == list(SETS):
        record(HEADING, body, header, timed=False)


if __name__ == "__main__":
    main()
