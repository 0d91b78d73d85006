"""Memory quality on PrefEval: what is stored, and what comes back when it matters.

``python -m benchmarks.memory`` (``make bench-memory``). Data: ``../shared/data/prefeval-dev/``
(10 topics, 495 preference/request pairs). Measured, beside the previous behaviour (a
first-person regex extractor, and cosine of the request to each memory with a fixed 0.35 floor):

1. storage: the share of PrefEval's preferences kept as memories, and of plain requests and
   questions kept (PrefEval's requests; BFCL's questions when ``bfcl-eval`` is installed);
2. recall: every request gets its own user holding its preference and nine unrelated ones
   (from other topics, seeded), stored with ``TurnRouter.record`` in one session; the request
   is routed in a new session through ``TurnRouter.route`` in a catalog of an everyday
   assistant's functions (``benchmarks.memory_catalog``). Counted: the preference first among
   the memories returned (recall@1), among the first three (recall@3), among those returned
   (default ``max_memories``), and how many unrelated memories come back per route;
3. the everyday set written for the tests (``benchmarks.memory_everyday``): the share of each
   kind of statement kept, the update pairs, and the ten everyday cases recalled.

Tables go to stdout and to ``benchmarks/RESULTS.md`` under "## Memory (make bench-memory)", with
the harness's header. Quality figures do not depend on the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from benchmarks import memory_everyday
from benchmarks.harness import Header, record
from benchmarks.memory_catalog import ASSISTANT
from router.catalog.functions import parse_function
from router.embedding import Embedder
from router.routing.routed import Turn
from router.routing.turns import TurnRouter
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings
from router.sessions.extraction import StatementExtractor

HEADING = "## Memory (make bench-memory)"
# From the project root, as the shared data README says; elsewhere: --data (make bench-memory PREFEVAL=...).
DATA = Path("../shared/data/prefeval-dev")
NAMESPACE = "assistant"
UNRELATED = 9
SEED = 14


@dataclass(frozen=True)
class Pair:
    """One PrefEval pair: a stated preference and a later request it matters for."""

    topic: str
    preference: str
    question: str


def load_pairs(root: Path = DATA) -> list[Pair]:
    """Every pair of every topic file, in file order."""
    pairs = []
    for path in sorted(root.glob("*.json")):
        pairs += [Pair(path.stem, p["preference"], p["question"]) for p in json.loads(path.read_text())]
    return pairs


class LegacyExtractor:
    """The previous extractor: first-person sentences matched by a regular expression."""

    _sentence = re.compile(r"(?<=[.!?;])\s+|\n+")
    _first_person = re.compile(
        r"\b(i am|i'm|i was|i have|i've|my|i prefer|i'd rather|i like|i love|i enjoy|i hate|i dislike|"
        r"i don't like|i do not like|i can't|i cannot|i usually|i always|i never|i live|i work|i study|"
        r"call me|remember|we are|we're|our)\b",
        re.IGNORECASE,
    )
    _request = re.compile(
        r"^(can|could|would|will) you\b|^(please\s+)?(find|book|show|get|send|search|tell)\b", re.IGNORECASE
    )

    def extract(self, text: str) -> list[str]:
        found = []
        for raw in self._sentence.split(text):
            sentence = " ".join(raw.split()).strip(" -*")
            if not sentence or sentence.endswith("?") or self._request.search(sentence):
                continue
            if self._first_person.search(sentence) and len(sentence.split()) >= 3 and sentence not in found:
                found.append(sentence)
        return found


def stored_share(extractor: StatementExtractor | LegacyExtractor, texts: Sequence[str]) -> float:
    """The share of ``texts`` from which at least one memory is kept."""
    return sum(1 for t in texts if extractor.extract(t)) / max(1, len(texts))


def bfcl_questions() -> list[str] | None:
    """BFCL's single-turn user questions, or None when ``bfcl-eval`` is not installed."""
    try:
        from benchmarks.bfcl import load_questions

        return [" ".join(m["content"] for m in q.messages) for q in load_questions()]
    except RuntimeError:
        return None


def users(pairs: Sequence[Pair], *, seed: int = SEED) -> list[list[int]]:
    """For each pair, its own preference then nine of other topics (seeded)."""
    rng = random.Random(seed)
    chosen = []
    for i, pair in enumerate(pairs):
        others = [j for j, other in enumerate(pairs) if other.topic != pair.topic]
        chosen.append([i, *rng.sample(others, UNRELATED)])
    return chosen


@dataclass
class Recall:
    """Recall counts over routes."""

    routes: int = 0
    first: int = 0
    top3: int = 0
    returned: int = 0
    unrelated: int = 0
    memories: int = 0

    def add(self, relevant: Sequence[bool]) -> None:
        self.routes += 1
        self.first += bool(relevant[:1] and relevant[0])
        self.top3 += any(relevant[:3])
        self.returned += any(relevant)
        self.unrelated += sum(1 for r in relevant if not r)
        self.memories += len(relevant)

    def row(self, label: str) -> str:
        n = max(1, self.routes)
        return (
            f"| {label} | {self.first / n:.1%} | {self.top3 / n:.1%} | {self.returned / n:.1%} "
            f"| {self.unrelated / n:.2f} | {self.memories / n:.2f} |"
        )


async def store_users(router: TurnRouter, pairs: Sequence[Pair], chosen: Sequence[list[int]]) -> None:
    """Each user's ten preferences, one message each, posted as one finished run."""
    for i, members in enumerate(tqdm(chosen, desc="storing users", unit="user")):
        messages = [{"role": "user", "content": pairs[j].preference} for j in members]
        await router.record(f"s{i}", messages, user_id=f"u{i}", namespace=NAMESPACE)


async def route_all(router: TurnRouter, pairs: Sequence[Pair], label: str) -> Recall:
    """Route every request for its user; count where its preference comes back."""
    counts = Recall()
    for i, pair in enumerate(tqdm(pairs, desc=label, unit="route")):
        turn = Turn(NAMESPACE, [{"role": "user", "content": pair.question}], session_id=f"n{i}", user_id=f"u{i}")
        routed = await router.route(turn)
        counts.add([m.text in pair.preference for m in routed.memories])
    return counts


async def legacy_recall(embedder: Embedder, pairs: Sequence[Pair], chosen: Sequence[list[int]]) -> Recall:
    """The previous recall on the previous extractor's memories: cosine to the request, floor 0.35, top 3."""
    legacy = LegacyExtractor()
    questions = await embedder.query([p.question for p in pairs])
    counts = Recall()
    for i, members in enumerate(chosen):
        texts = [t for j in members for t in legacy.extract(pairs[j].preference)]
        if not texts:
            counts.add([])
            continue
        scores = (await embedder.embed(texts, kind="memory")) @ questions[i]
        order = [k for k in np.argsort(-scores)[:3] if scores[k] >= 0.35]
        counts.add([texts[k] in pairs[i].preference for k in order])
    return counts


async def measure(data: Path, *, sample: int | None) -> str:
    pairs = load_pairs(data)
    if sample:  # spread over the file order, so several topics are in it
        pairs = [pairs[i * len(pairs) // sample] for i in range(min(sample, len(pairs)))]
    chosen = users(pairs)
    new, old = StatementExtractor(), LegacyExtractor()
    preferences = [p.preference for p in pairs]
    questions = [p.question for p in pairs]
    bfcl = bfcl_questions()
    lines = [
        f"PrefEval development set: {len(pairs)} pairs, {len({p.topic for p in pairs})} topics "
        "(`make bench-memory PREFEVAL=<dir>` when the data is not at `../shared/data/prefeval-dev`).",
        "",
        "| stored as memories | now | before |",
        "| --- | --- | --- |",
        f"| PrefEval preferences (want >= 98%) | {stored_share(new, preferences):.1%} "
        f"| {stored_share(old, preferences):.1%} |",
        f"| PrefEval requests (want <= 5%) | {stored_share(new, questions):.1%} | {stored_share(old, questions):.1%} |",
    ]
    if bfcl is not None:
        lines.append(
            f"| BFCL questions, {len(bfcl):,} (want <= 5%) | {stored_share(new, bfcl):.1%} "
            f"| {stored_share(old, bfcl):.1%} |"
        )
    lines += [*memory_everyday.stored(), "", *memory_everyday.updates()]
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        runtime = Runtime(Settings(storage=StorageSettings(data=Path(tmp) / "data")))
        await runtime.start()
        try:
            router = runtime.turns
            functions = [parse_function(f, where=f"functions[{i}]") for i, f in enumerate(ASSISTANT)]
            await runtime.service.apply(NAMESPACE, functions, source="bench")
            await store_users(router, pairs, chosen)
            now = await route_all(router, pairs, "routing")
            before = await legacy_recall(runtime.service.index.embedder, pairs, chosen)
            settings = router.settings
            lines += [
                "",
                f"Recall: each request's user holds its preference and {UNRELATED} of other topics (seed {SEED}); "
                f"the request is routed in a new session in a catalog of {len(functions)} everyday functions. "
                f"Returned = among the memories a route returns (max_memories {settings.max_memories}, "
                f"standout {settings.memory_standout:g}, floor {settings.memory_min_score:g}). Want: returned >= 85%, "
                "unrelated <= 0.5 per route.",
                "",
                "| recall | @1 | @3 | returned | unrelated per route | memories per route |",
                "| --- | --- | --- | --- | --- | --- |",
                now.row("now: relevance to the turn and its functions, relative cut-off"),
                before.row("before: regex extractor, cosine to the request >= 0.35"),
                "",
                *await memory_everyday.recall(runtime),
            ]
        finally:
            await runtime.stop()
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=None, help="only N pairs, spread over the set (not recorded)")
    parser.add_argument("--data", type=Path, default=DATA, help="the prefeval-dev directory")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        parser.error(f"no PrefEval data at {args.data}: pass --data (make bench-memory PREFEVAL=<dir>)")
    header = Header.begin("benchmarks.memory", argv)
    body = asyncio.run(measure(args.data, sample=args.sample))
    print(f"{header.finish().markdown(timed=False)}\n\n{body}")
    if args.sample is None:
        record(HEADING, body, header, timed=False)


if __name__ == "__main__":
    main()
