"""The everyday part of ``make bench-memory``: statements a person expects kept, and recalled.

Data written for the tests: ``tests/everyday_statements.py`` (statements by kind, things never
kept, update pairs) and ``tests/integration/everyday.py`` (ten cases: what was said, a later
request, and the function it routes to, in an everyday assistant's catalog; forty more
statements on other topics make a user of fifty memories). ``examples/statements_apart.json``
holds 1,118 sentences written apart from the rules in five sets, half to keep.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from router.catalog.functions import parse_function
from router.routing.routed import Turn
from router.server.runtime import Runtime
from router.sessions.expiry import expires_at
from router.sessions.extraction import StatementExtractor
from router.sessions.slots import replaces
from tests.everyday_statements import KEPT, NOT_KEPT, NOT_UPDATES, TROUBLE, UPDATES
from tests.integration.everyday import CASES, CATALOG, OTHER_MEMORIES

NAMESPACE = "everyday"
APART = Path(__file__).resolve().parent.parent / "examples" / "statements_apart.json"


def stored() -> list[str]:
    """Rows of the stored-share table: each kind of everyday statement, and what must not be kept."""
    extractor = StatementExtractor()
    rows = []
    for kind, texts in KEPT.items():
        share = sum(1 for t in texts if extractor.extract(t)) / len(texts)
        rows.append(f"| everyday: {kind}, {len(texts)} (want >= 95%) | {share:.1%} | |")
    for kind, texts in (("questions, requests, secrets", NOT_KEPT), ("trouble and passing states", TROUBLE)):
        share = sum(1 for t in texts if extractor.extract(t)) / len(texts)
        rows.append(f"| everyday: {kind}, {len(texts)} (want 0%) | {share:.1%} | |")
    return [*rows, *apart()]


def apart() -> list[str]:
    """Rows of the sentences written apart from the rules: those kept, and the others stored, for good or a while.

    A memory is stored for a while when its sentence names a time still to come ("this weekend"), as
    ``router.routing.remembering`` does; one whose time is over is not stored.
    """
    said = json.loads(APART.read_text(encoding="utf-8"))
    extractor = StatementExtractor()
    kept = sum(1 for t in said["keep"] if extractor.extract(t)) / len(said["keep"])
    ends = [[expires_at(f) for f in extractor.extract(t)] for t in said["drop"]]
    lasting = sum(1 for e in ends if None in e)
    meanwhile = sum(1 for e in ends if None not in e and any(end > time.time() for end in e if end is not None))
    drop = len(said["drop"])
    return [
        f"| written apart: to keep, {len(said['keep'])} (want >= 95%) | {kept:.1%} | |",
        f"| written apart: not to keep, {drop}, stored for good (want 0%) | {lasting / drop:.1%} | |",
        f"| written apart: not to keep, {drop}, stored until the time they name ends | {meanwhile / drop:.1%} | |",
    ]


def updates() -> list[str]:
    """The update pairs: how many replace, and how many look-alike pairs wrongly merge."""
    replaced = sum(1 for pair in UPDATES if replaces(*pair))
    merged = sum(1 for pair in NOT_UPDATES if replaces(*pair))
    return [
        "| update pairs | replaced |",
        "| --- | --- |",
        f"| a newer statement of the same slot or subject, {len(UPDATES)} | {replaced} |",
        f"| look-alike statements that are both true, {len(NOT_UPDATES)} (want 0) | {merged} |",
    ]


async def recall(runtime: Runtime) -> list[str]:
    """The ten everyday cases: one memory per user, then all ten in one user."""
    turns = runtime.turns
    functions = [parse_function(f, where=f"functions[{i}]") for i, f in enumerate(CATALOG)]
    await runtime.service.apply(NAMESPACE, functions, source="bench")
    for number, case in enumerate(CASES):
        said = [{"role": "user", "content": case.said}]
        await turns.record(f"one-{number}", said, user_id=f"one-{number}", namespace=NAMESPACE)
        await turns.record(f"all-{number}", said, user_id="all", namespace=NAMESPACE)
    rows = ["| everyday recall | returned | unrelated per route |", "| --- | --- | --- |"]
    for label, user in (("one memory per user", "one-{}"), ("all ten memories in one user", "all")):
        returned = unrelated = 0
        for number, case in enumerate(CASES):
            turn = Turn(NAMESPACE, [{"role": "user", "content": case.request}], user_id=user.format(number))
            texts = [m.text for m in (await turns.route(turn)).memories]
            returned += case.memory in texts
            unrelated += len([t for t in texts if t != case.memory])
        rows.append(f"| {label} (want 10/10) | {returned}/{len(CASES)} | {unrelated / len(CASES):.2f} |")
    return [*rows, "", await _fifty(runtime)]


async def _fifty(runtime: Runtime) -> str:
    """A user of fifty memories on mixed topics: is the one a request needs among the first five?"""
    turns = runtime.turns
    said = [{"role": "user", "content": text} for text in [c.said for c in CASES] + OTHER_MEMORIES]
    await turns.record("fifty", said, user_id="fifty", namespace=NAMESPACE)
    ranking = turns.settings
    turns.settings = ranking.model_copy(update={"max_memories": 5, "memory_standout": 0.0})
    try:
        found = 0
        for case in CASES:
            turn = Turn(NAMESPACE, [{"role": "user", "content": case.request}], user_id="fifty")
            found += case.memory in [m.text for m in (await turns.route(turn)).memories]
    finally:
        turns.settings = ranking
    return (
        f"A user of {len(said)} memories on mixed topics (the ten cases' and {len(OTHER_MEMORIES)} others): the "
        f"one a request needs is among the first five for {found}/{len(CASES)} requests (want >= 90%)."
    )
