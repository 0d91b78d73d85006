"""Follow-ups: a turn that leans on the one before it ("Book the first one for John", "And AF 456?").

``python -m benchmarks.quality_followups`` (``make bench-quality`` runs it after the English
sets). Two sets of two-turn conversations in the example catalog's namespaces:
``examples/followups.jsonl`` (53, written for this measure: a development set) and
``examples/followups_unseen.jsonl`` (72, 24 of each kind, written apart from the router's rules:
not tuned on). In the first, in 24 the second turn leans on the first for its function (``"kind": "vague"``: a
reference, an elliptical "and for ...?", "do the same for ..."); in 13 it refers to the first
turn's object but wants another function (``"switch"``: "Is it on time?" after a booking); in
16 it asks something new in full (``"clear"``). The context must carry the first kind and not
pull the other two back. Each second turn is ranked by the peers (Semantic Kernel on both turns
joined into one vector, langgraph-bigtool on the new turn) and by the router: the new turn
alone, both turns sent as one turn (two messages, so routed as their parts), and with the
session's history (the first turn stored with ``record``), its default way.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.bfcl import BfclQuestion
from benchmarks.harness import Header
from benchmarks.quality_data import Scores, score_all
from benchmarks.quality_languages import CATALOG, serving
from benchmarks.quality_report import Report
from router.evaluate.peers import DenseBaseline, bigtool_text, semantic_kernel_text
from router.routing.routed import Routed, Turn
from router.server.settings import Settings, StorageSettings
from sync.files import read_file

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SET = EXAMPLES / "followups.jsonl"
# Each set, and what it is to the rules: the development set, and one they were not tuned on.
SETS = {
    SET: "written for this measure",
    EXAMPLES / "followups_unseen.jsonl": "written apart from the rules, not tuned on",
}
COLUMNS = ("R@1", "R@3", "MRR@10")
KINDS = {
    "vague": "lean on the turn before",
    "switch": "refer to it for another function",
    "clear": "ask something new in full",
}


@dataclass(frozen=True)
class FollowUp:
    """One conversation: its earlier turns, and its last turn as the question scored."""

    namespace: str
    kind: str
    earlier: tuple[str, ...]
    question: BfclQuestion


def load_follow_ups(path: Path = SET) -> list[FollowUp]:
    """The set's conversations, in file order."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [
        FollowUp(
            row["namespace"],
            row["kind"],
            tuple(row["turns"][:-1]),
            BfclQuestion(
                f"{path.stem}_{i}",
                row["kind"],
                ({"role": "user", "content": row["turns"][-1]},),
                tuple(row["expected"]),
            ),
        )
        for i, row in enumerate(rows)
    ]


def _names(routed: Routed) -> list[str]:
    return [f.function.name for f in routed.functions]


async def rankings(
    follow_ups: Sequence[FollowUp], settings: Settings, *, peers: bool = True
) -> tuple[dict[str, dict[str, list[str]]], set[str]]:
    """Each method's ranking of every last turn, by method then question id (cold, the defaults), and
    the last turns whose best cosine to a function is under the router's vague mark (in the space
    the turn is routed in). ``peers``: rank with the peers too (they read English only)."""
    methods: dict[str, dict[str, list[str]]] = {}
    vague: set[str] = set()
    async with serving(settings) as runtime:
        router, embedder = runtime.turns, runtime.service.index.embedder
        for namespace in sorted({f.namespace for f in follow_ups}):
            functions = read_file(CATALOG / f"{namespace}.json").functions
            sk = DenseBaseline(embedder, functions, semantic_kernel_text)
            bigtool = DenseBaseline(embedder, functions, bigtool_text)
            for i, follow_up in enumerate(f for f in follow_ups if f.namespace == namespace):
                question, earlier = follow_up.question, [{"role": "user", "content": t} for t in follow_up.earlier]
                index, found = await runtime.catalogs.embed_turn(namespace, [question.text])
                hits = await asyncio.to_thread(index.store.search, namespace, found[0].tolist(), limit=1)
                if (hits[0].score if hits else 0.0) < index.vague_mark(router.settings.context_vague):
                    vague.add(question.id)
                ranked: dict[str, list[str]] = {}
                if peers:
                    vectors = await embedder.query(["\n".join([*follow_up.earlier, question.text]), question.text])
                    ranked |= {"sk": sk.rank(vectors[:1])[0], "bigtool": bigtool.rank(vectors[1:])[0]}
                ranked |= {
                    "alone": _names(await router.route(Turn(namespace, question.messages, max_functions=10))),
                    "joined": _names(
                        await router.route(Turn(namespace, [*earlier, *question.messages], max_functions=10))
                    ),
                }
                session = f"followups-{namespace}-{i}"
                await router.record(session, earlier, user_id=None, namespace=namespace)
                with_history = Turn(namespace, question.messages, max_functions=10, session_id=session)
                ranked["history"] = _names(await router.route(with_history))
                for method, names in ranked.items():
                    methods.setdefault(method, {})[question.id] = names
    return methods, vague


async def measure(report: Report) -> None:
    """Add the follow-ups' table to ``report``."""
    from benchmarks.quality import BIGTOOL, SK

    labels = {
        "sk": SK.replace("last 2 + new joined", "both turns joined, one vector"),
        "bigtool": BIGTOOL + ", new turn",
    }
    for path, origin in SETS.items():
        with tempfile.TemporaryDirectory(prefix="bench-followups-") as tmp:
            settings = Settings(storage=StorageSettings(data=Path(tmp)))
            await measure_set(report, path, origin, settings, peers=labels)


async def measure_set(
    report: Report, path: Path, origin: str, settings: Settings, *, peers: dict[str, str] | None = None
) -> None:
    """Add one set's table to ``report``, routed on a runtime of ``settings``; ``peers`` labels the peers' rows."""
    follow_ups = load_follow_ups(path)
    ranked, vague = await rankings(follow_ups, settings, peers=bool(peers))
    total = Counter(f.kind for f in follow_ups)
    under = Counter(f.kind for f in follow_ups if f.question.id in vague)
    kinds = {k: what for k, what in KINDS.items() if total[k]}
    table = report.table(
        f"Follow-ups (`examples/{path.name}`: {len(follow_ups)} two-turn conversations in the example "
        f"catalog's namespaces, {origin}): the second turn",
        lead=("second turns", "method"),
        columns=COLUMNS,
        note="The router with history stores the first turn in a session and routes the second with it "
        "(the defaults: the context counts for a turn whose best similarity is under the vague mark); "
        + ("peers and " if peers else "")
        + "the other router rows see the second turn alone, or both turns. Under the mark (cold, the router's "
        "dense search of the second turn): "
        + ", ".join(f"{under[k]} of the {total[k]} that {what}" for k, what in kinds.items())
        + ".",
    )
    rows = {
        **(peers or {}),
        "alone": "router, new turn alone",
        "joined": "router, both turns sent as one turn (routed as their parts)",
        "history": "**router with history** (defaults)",
    }
    for kind, what in kinds.items():
        mine = [f.question for f in follow_ups if f.kind == kind]
        for method, label in rows.items():
            table.add(score_all(ranked[method], mine), f"{len(mine)} that {what}", label)
    alone, history = (score_all(ranked[m], [f.question for f in follow_ups]) for m in ("alone", "history"))
    report.notes.append(_note(path, alone, history))


def _note(path: Path, alone: Scores, history: Scores) -> str:
    return (
        f"- Follow-ups of `examples/{path.name}`, all {alone.count} second turns: with history "
        f"R@1 {history.recall(1):.3f}, R@3 {history.recall(3):.3f} against the new turn alone "
        f"R@1 {alone.recall(1):.3f}, R@3 {alone.recall(3):.3f}."
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.quality_followups", description=__doc__)
    parser.parse_args(argv)
    header, report = Header.begin("benchmarks.quality_followups", argv), Report()
    asyncio.run(measure(report))
    print(f"{header.finish().markdown(timed=False)}\n\n{report.markdown()}")


if __name__ == "__main__":
    main()
