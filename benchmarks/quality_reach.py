"""How far one wrong stored run reaches in the multilingual space.

For each request of ``examples/multilingual.jsonl``, a run that called a wrong function for it
(the cold router's tenth for the request: a plausible mistake whose call succeeded) is stored,
and every request of its namespace is routed with ``explain``. The run *reaches* a request when
its example counts in that request's ranking; it *takes* it when the wrong function comes
first there and was not first cold. The example is then deleted before the next request's run.
Measured at the space's ``ROUTER_MULTILINGUAL_SAME_REQUEST`` and at all-MiniLM-L6-v2's 0.6.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from benchmarks.bfcl import BfclQuestion
from benchmarks.quality_runs import run_of
from router.retrieval.voting import SAME
from router.routing.routed import Turn
from router.server.runtime import Runtime

K = 10


@dataclass
class Reached:
    """Counts of (stored run, routed request) pairs: in total, reached by the run, taken by it."""

    pairs: int = 0
    reached: int = 0
    taken: int = 0

    def cell(self) -> str:
        """``reached / taken of pairs``."""
        return f"{self.reached:,} / {self.taken:,} of {self.pairs:,}"


@dataclass
class Figures:
    """One setting's figures: the run's own request, the others in its language, those in other languages."""

    itself: Reached
    same_language: Reached
    other_languages: Reached


async def measure_reach(runtime: Runtime, requests: Sequence[tuple[str, BfclQuestion]]) -> Figures:
    """Store one wrong run per request (with its namespace) and route its namespace's requests.

    ``runtime``: started, holding the requests' catalogs in both spaces; a request's
    ``category`` is its language.
    """
    found = Figures(Reached(), Reached(), Reached())
    router = runtime.turns

    async def first_and_reach(namespace: str, text: str, wrong: str, asked: str) -> tuple[str, bool]:
        turn = Turn(namespace, [{"role": "user", "content": text}], max_functions=K, explain=True)
        routed = await router.route(turn)
        why = routed.explanations.get(wrong)
        reached = why is not None and why.example is not None and why.example.text == asked
        return routed.functions[0].function.name, reached

    cold: dict[str, list[str]] = {}
    for namespace, question in requests:
        routed = await router.route(Turn(namespace, question.messages, max_functions=K))
        cold[question.text] = [f.function.name for f in routed.functions]
    for namespace, question in requests:
        asked = question.text
        wrong = next(n for n in reversed(cold[asked]) if n not in question.expected)
        await router.record(f"reach-{question.id}", run_of(question, [wrong]), user_id=None, namespace=namespace)
        for other in (q for n, q in requests if n == namespace):
            first, reached = await first_and_reach(namespace, other.text, wrong, asked)
            if other is question:
                kind = found.itself
            else:
                kind = found.same_language if other.category == question.category else found.other_languages
            kind.pairs += 1
            kind.reached += reached
            kind.taken += first == wrong and cold[other.text][0] != wrong
        for index in (runtime.catalogs.index, runtime.catalogs.multilingual):
            if index is not None:
                index.store.examples.forget(namespace, [wrong])
    return found


def reach_note(rows: Sequence[tuple[str, Figures]]) -> str:
    """The reach figures as a Markdown table."""
    lines = [
        "",
        "**Requests in other languages: how far one wrong stored run reaches (multilingual space)**",
        "",
        "| the space's same-request cosine | its own request | other requests, same language | other languages |",
        "| --- | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {label} | {r.itself.cell()} | {r.same_language.cell()} | {r.other_languages.cell()} |" for label, r in rows
    ]
    lines += [
        "",
        "Reached / taken of pairs: for each request a run calling a wrong function (the cold router's tenth) is "
        "stored, every request of its namespace routed, then the example deleted. Reached: the run's example "
        "counts in the request's ranking; taken: the wrong function comes first there, and was not first cold.",
    ]
    return "\n".join(lines)


def matched_same(
    expected: Sequence[Sequence[str]], default: npt.NDArray[np.float32], space: npt.NDArray[np.float32]
) -> tuple[float, float]:
    """The space's cosine above which as many pairs of requests wanting different functions lie as above ``SAME``
    in the default space; and that share of the pairs.

    ``default`` and ``space``: the same requests embedded by each model (normalised rows).
    """
    rows, columns = np.triu_indices(len(expected), 1)
    pairs = zip(rows.tolist(), columns.tolist(), strict=True)
    different = np.array([not set(expected[i]) & set(expected[j]) for i, j in pairs])
    share = float(((default @ default.T)[rows, columns][different] >= SAME).mean())
    return float(np.quantile((space @ space.T)[rows, columns][different], 1 - share)), share
