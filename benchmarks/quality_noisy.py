"""Usage learning that mistakes should not hijack: a second learning pass with a tenth of the runs wrong.

The training half is stored again in a fresh namespace (a copy of the set's catalog, so that
it does not mix with the clean pass): a seeded ``WRONG_SHARE`` of the runs call, in place of
their first expected function, a plausible wrong one whose call succeeds: the best-ranked
function of the bare dense peer (``name: description``) that the request does not need. The
test half is then routed in that namespace and compared with the clean pass and with cold.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

from benchmarks.bfcl import BfclQuestion
from benchmarks.quality_data import Scores, score_all
from benchmarks.quality_runs import learn, route_questions
from router.embedding import Embedder, Progress, Vectors
from router.evaluate.peers import DenseBaseline
from router.server.runtime import Runtime

WRONG_SHARE = 0.1
SEED = 1


def wrong_calls(train: Sequence[BfclQuestion], vectors: Vectors, dense: DenseBaseline) -> dict[str, str]:
    """A seeded ``WRONG_SHARE`` of ``train`` by id, each with the dense peer's best function it does not need."""
    chosen = sorted(random.Random(SEED).sample(range(len(train)), round(WRONG_SHARE * len(train))))
    if not chosen:
        return {}
    # One more than a request expects always holds a function it does not need.
    ranked = dense.rank(vectors[chosen], k=1 + max(len(train[row].expected) for row in chosen))
    wrong = {}
    for row, names in zip(chosen, ranked, strict=True):
        question = train[row]
        mistake = next((n for n in names if n not in question.expected), None)
        if mistake is not None:
            wrong[question.id] = mistake
    return wrong


async def noisy_pass(
    runtime: Runtime,
    name: str,
    functions: Sequence[Any],
    train: Sequence[BfclQuestion],
    train_vectors: Vectors,
    test: Sequence[BfclQuestion],
    dense: DenseBaseline,
) -> tuple[Scores, int]:
    """The test half's scores after the noisy training half is stored in a copy of the catalog; runs made wrong."""
    namespace = f"{name}-noisy"
    await runtime.service.apply(namespace, list(functions), source="bench")
    try:
        wrong = wrong_calls(train, train_vectors, dense)
        await learn(runtime.turns, train, namespace=namespace, wrong=wrong)
        ranked = await route_questions(runtime.turns, test, f"{name} noisy", namespace=namespace)
    finally:
        await runtime.service.remove(namespace)
    return score_all(ranked, test), len(wrong)


def reuse_catalog_vectors(embedder: Embedder) -> None:
    """Let ``embedder`` hand back the vectors of catalog texts it already embedded.

    The noisy pass's copy of a catalog holds the very texts embedded for the set's own
    namespace; the model is deterministic, so computing them again would only cost time.
    """
    embed = embedder.embed
    kept: dict[tuple[str, str], np.ndarray[Any, np.dtype[np.float32]]] = {}

    async def remembering(texts: Sequence[str], *, progress: Progress | None = None, kind: str = "catalog") -> Vectors:
        if kind not in ("catalog", "facet"):
            return await embed(texts, progress=progress, kind=kind)
        missing = [t for t in dict.fromkeys(texts) if (kind, t) not in kept]
        if missing:
            kept.update(
                zip(((kind, t) for t in missing), await embed(missing, progress=progress, kind=kind), strict=True)
            )
        elif progress is not None:
            progress(len(texts), len(texts))
        out = np.zeros((len(texts), embedder.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = kept[(kind, text)]
        return out

    replace: Callable[..., Awaitable[Vectors]] = remembering
    object.__setattr__(embedder, "embed", replace)
