"""The router's side of the quality benchmark: every ranking comes from its own code paths.

Questions go through ``TurnRouter.route`` (embedding, hybrid candidates, fusion); sessions are
stored with ``TurnRouter.record`` (history, usage examples). The fusion comparison calls the
same ``retrieval.candidates.candidates`` and ``retrieval.fusion.hybrid`` that ``route`` calls, and
Qdrant's two fusions (RRF and DBSF) of the same candidates' dense and sparse rankings.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from tqdm import tqdm

from benchmarks.bfcl import BfclQuestion
from benchmarks.quality_data import Conversation
from router.retrieval.candidates import candidates
from router.retrieval.fusion import hybrid
from router.retrieval.index import FunctionStore
from router.retrieval.scored import Candidate
from router.retrieval.sparse import query_vector
from router.routing.routed import Turn
from router.routing.turns import TurnRouter

NAMESPACE = "bfcl"
K = 10
# Routes in flight at once: the embedder's micro-batches serve them together, as under real load.
CONCURRENCY = 8
T = TypeVar("T")


async def _bounded(jobs: Sequence[Callable[[], Awaitable[T]]], label: str) -> list[T]:
    gate = asyncio.Semaphore(CONCURRENCY)
    bar = tqdm(total=len(jobs), desc=label, file=sys.stderr, leave=False)

    async def run(job: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            result = await job()
        bar.update()
        return result

    try:
        return await asyncio.gather(*(run(job) for job in jobs))
    finally:
        bar.close()


def _names(routed: Any) -> list[str]:
    return [f.function.name for f in routed.functions]


async def route_questions(
    router: TurnRouter, questions: Sequence[BfclQuestion], label: str, *, namespace: str = NAMESPACE
) -> dict[str, list[str]]:
    """Each question's top ``K`` names, through ``TurnRouter.route`` (no session)."""

    def job(question: BfclQuestion) -> Callable[[], Awaitable[list[str]]]:
        async def go() -> list[str]:
            return _names(await router.route(Turn(namespace, question.messages, max_functions=K)))

        return go

    ranked = await _bounded([job(q) for q in questions], label)
    return {q.id: names for q, names in zip(questions, ranked, strict=True)}


def fusion_rankings(
    store: FunctionStore,
    questions: Sequence[BfclQuestion],
    vectors: npt.NDArray[np.float32],
    *,
    limit: int,
    weights: Sequence[float],
    example_weight: float,
    namespace: str = NAMESPACE,
) -> dict[str, dict[str, list[str]]]:
    """Rankings of each fusion method, by method then question id (runs on the calling thread).

    ``convex a=...`` is the router's ``hybrid`` with that lexical weight (0 is dense only, 1
    lexical only); ``RRF``/``DBSF`` are Qdrant's fusions, as Qdrant defines them, of the
    candidates' two rankings (the ``limit`` best of each).
    """
    methods: dict[str, dict[str, list[str]]] = {}
    frequencies = store.frequencies(namespace)
    for question, vector in tqdm(
        list(zip(questions, vectors, strict=True)), desc="fusions", file=sys.stderr, leave=False
    ):
        dense = vector.tolist()
        sparse = query_vector(question.text, frequencies)
        found = candidates(store, namespace, dense, sparse, limit=limit)
        for weight in weights:
            ranked = hybrid(found, lexical_weight=weight, example_weight=example_weight)
            methods.setdefault(f"convex a={weight:g}", {})[question.id] = [f.name for f in ranked[:K]]
        for name, fused in (("RRF", _rrf), ("DBSF", _dbsf)):
            methods.setdefault(name, {})[question.id] = fused(found, limit)[:K]
    return methods


def _rankings(found: Sequence[Candidate], limit: int) -> list[list[tuple[str, float]]]:
    """The dense and the sparse ranking of the candidates, the ``limit`` best of each."""
    dense = sorted(((c.name, c.cosine) for c in found), key=lambda p: -p[1])[:limit]
    sparse = sorted(((c.name, c.lexical) for c in found if c.lexical > 0), key=lambda p: -p[1])[:limit]
    return [dense, sparse]


def _rrf(found: Sequence[Candidate], limit: int) -> list[str]:
    """Reciprocal rank fusion with k = 60, as Qdrant's ``Fusion.RRF``."""
    scores: dict[str, float] = {}
    for ranking in _rankings(found, limit):
        for rank, (name, _) in enumerate(ranking):
            scores[name] = scores.get(name, 0.0) + 1.0 / (60 + rank + 1)
    return sorted(scores, key=lambda n: -scores[n])


def _dbsf(found: Sequence[Candidate], limit: int) -> list[str]:
    """Distribution-based score fusion, as Qdrant's ``Fusion.DBSF``: each ranking's scores scaled by mean +- 3 std."""
    scores: dict[str, float] = {}
    for ranking in _rankings(found, limit):
        values = [v for _, v in ranking]
        if not values:
            continue
        mean, spread = statistics.fmean(values), 3 * statistics.pstdev(values)
        low, high = mean - spread, mean + spread
        for name, value in ranking:
            scaled = 0.5 if high == low else min(max((value - low) / (high - low), 0.0), 1.0)
            scores[name] = scores.get(name, 0.0) + scaled
    return sorted(scores, key=lambda n: -scores[n])


async def multi_turn(
    routers: dict[str, TurnRouter], conversations: Sequence[Conversation], *, recent: int, namespace: str = NAMESPACE
) -> dict[str, list[list[str]]]:
    """Rank every turn of every conversation with each method, in turn order.

    ``alone`` routes the new turn without a session; ``joined`` routes the last ``recent``
    user turns and the new one as one turn of several messages (routed as their parts);
    every other key is a router whose session holds the earlier user turns (stored with
    ``record``), fused with its own ``context_weight``.
    """
    base = next(iter(routers.values()))

    def job(conversation: Conversation) -> Callable[[], Awaitable[dict[str, list[list[str]]]]]:
        async def go() -> dict[str, list[list[str]]]:
            ranked: dict[str, list[list[str]]] = {"alone": [], "joined": []}
            session = f"mt-{conversation.id}"
            for position, turn in enumerate(conversation.turns):
                message = [{"role": "user", "content": turn.text}]
                earlier = [{"role": "user", "content": t.text} for t in conversation.turns[:position]][-recent:]
                ranked["alone"].append(_names(await base.route(Turn(namespace, message, max_functions=K))))
                joined = Turn(namespace, [*earlier, *message], max_functions=K)
                ranked["joined"].append(_names(await base.route(joined)))
                for label, router in routers.items():
                    turn_with_history = Turn(
                        namespace, message, session_id=session, max_functions=K, recent_messages=recent
                    )
                    ranked.setdefault(label, []).append(_names(await router.route(turn_with_history)))
                await base.record(session, message, user_id=None, namespace=namespace)
            return ranked

        return go

    per_conversation = await _bounded([job(c) for c in conversations], "multi-turn")
    merged: dict[str, list[list[str]]] = {}
    for ranked in per_conversation:
        for label, rows in ranked.items():
            merged.setdefault(label, []).extend(rows)
    return merged


def run_of(question: BfclQuestion, called: Sequence[str] | None = None) -> list[Mapping[str, Any]]:
    """A finished run of one request: its user messages, then one assistant message calling
    ``called`` (default: the functions it expects) in order, each call answered by a result.

    A request needing several tools is one run of several calls, so that what goes together is in it.
    """
    names = question.expected if called is None else called
    calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": "{}"}}
        for i, name in enumerate(names)
    ]
    results = [{"role": "tool", "tool_call_id": call["id"], "content": '{"status": "ok"}'} for call in calls]
    return [*question.messages, {"role": "assistant", "content": "", "tool_calls": calls}, *results]


async def learn(
    router: TurnRouter,
    questions: Sequence[BfclQuestion],
    *,
    namespace: str = NAMESPACE,
    wrong: Mapping[str, str] | None = None,
) -> None:
    """Store each question as a finished run (``run_of``).

    ``wrong`` maps a question id to a function its run calls in place of its first expected one
    (a mistake whose call succeeds); the run's other calls stay.
    """
    wrong = wrong or {}

    def job(question: BfclQuestion) -> Callable[[], Awaitable[None]]:
        async def go() -> None:
            mistake = wrong.get(question.id)
            run = run_of(question, None if mistake is None else [mistake, *question.expected[1:]])
            await router.record(f"train-{question.id}", run, user_id=None, namespace=namespace)

        return go

    await _bounded([job(q) for q in questions], "learning")
