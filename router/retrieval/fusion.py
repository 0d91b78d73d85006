"""Fusion: one ranking from the signals of a request and of its recent context.

How much each signal counts is decided per request, from how informative it is there,
rather than fixed on one benchmark (``benchmarks/RESULTS.md`` measures both on every
development set):

- **lexical** (BM25) against **semantic** (cosine, or usage): each counts as much as its
  best candidate stands out from the other candidates (``peak``: best minus mean, in
  standard deviations). The lexical share is ``lexical_weight x peak_lexical /
  (peak_lexical + peak_semantic)``: a request naming one function's rare words ("final
  velocity") gives the words their share; one whose words every candidate shares ("model",
  "image") gives them little; the closer a stored request is to this one, the less the
  words add, as far as they cannot be trusted beside it (``x (1 - usage x (1 - words x
  typical**2))``, ``words`` the relative BM25 score the words gave that stored request's
  function, ``typical`` the median of the same over the stored requests closest to each
  candidate): where the words found the functions people called, a near stored request is
  no reason to silence them; where they pointed elsewhere, or found this one by luck among
  twins that share their words, the stored request speaks instead.
- **usage** (stored requests): a function's semantic score is the larger of its cosine and
  ``example_weight x`` the cosine to its closest usage example; an example counts only where
  it beats the function's own text, so it never lowers a function.
- **context** (the recent messages): weighted by how vague the new turn is and by how much
  better the recent context matches than the turn alone (``context_weight``); the words of a
  vague turn count less in the same measure (``router.retrieval.context``).

Everything is numpy over the ~40 candidates of a request: no extra search, no model call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from router.retrieval.scored import Candidate, Ranked


@dataclass(frozen=True)
class Weights:
    """How much each signal counted for a request.

    Attributes:
        dense: the share of the semantic score (cosine, or usage where it is higher).
        lexical: the share of the relative BM25 score.
        usage: the weight of a usage example's similarity inside the semantic score
            (0 when no example counted for any candidate).
    """

    dense: float
    lexical: float
    usage: float


# Spreads under this share of the best score are noise (BM25 length normalisation, cosine jitter), not evidence.
NOISE = 0.1


def peak(scores: np.ndarray) -> float:
    """How far the best of a signal's candidate scores stands out: ``(best - mean) / std``.

    The spread counts as at least ``NOISE x |best|``, so scores that are flat but for small
    differences (every function matching the same common word) do not look peaked.
    """
    if scores.size < 2:
        return 0.0
    best = float(scores.max())
    spread = max(float(scores.std()), NOISE * abs(best))
    return (best - float(scores.mean())) / spread if spread > 1e-12 else 0.0


def lexical_share(semantic: np.ndarray, lexical: np.ndarray, *, maximum: float, usage: float = 0.0) -> float:
    """The lexical share for one request.

    ``maximum x peak(lexical) / (peak(lexical) + peak(semantic)) x (1 - usage)``: each
    signal counts as much as its best candidate stands out from the rest, in units of its
    own spread. BM25 scores that single one function out earn the words their share; BM25
    scores spread evenly over many candidates (words every function shares) earn them
    little; a semantic score that stands out keeps words from overruling it. And a stored
    request speaks for ``usage`` of this one (``adaptive`` passes its similarity times how
    far the words cannot be trusted beside it): the words keep only the rest. A share fading with
    ``usage**2`` let the words overrule stored requests (below the plain nearest-example
    ranking on APIBench); silencing them for any near stored request made learned rankings
    worse than cold ones on BFCL, whose words name its functions.
    """
    if lexical.size == 0 or float(lexical.max()) <= 0:
        return 0.0
    words, meaning = peak(lexical), peak(semantic)
    if words + meaning <= 0:
        return 0.0
    known = min(1.0, max(0.0, usage))
    return maximum * words / (words + meaning) * (1.0 - known)


def _semantic(candidates: Sequence[Candidate], example_weight: float) -> tuple[np.ndarray, bool, float]:
    """Each candidate's ``max(cosine, b * example)``, whether an example won anywhere, and the usage.

    The usage is how much of the words' share the closest example takes: its similarity times
    how far the words cannot be trusted beside it (``_fit``).
    """
    cosine = np.fromiter((c.cosine for c in candidates), dtype=np.float64, count=len(candidates))
    raw = np.fromiter(
        (-2.0 if c.example is None else c.example for c in candidates), dtype=np.float64, count=len(candidates)
    )
    example = np.where(raw > -2.0, example_weight * raw, -2.0)
    closest = int(np.argmax(raw))
    known = float(raw[closest]) * (1.0 - _fit(candidates, closest))
    return np.maximum(cosine, example), bool((example > cosine).any()), known


def _fit(candidates: Sequence[Candidate], closest: int) -> float:
    """How far the words can be trusted beside the closest stored request: ``words x typical**2``.

    ``words`` is how well they found that request's function; ``typical`` the median of the same
    for every candidate's closest stored request. On a catalog whose words name its functions
    the median is 1 and the closest request's own fit decides; on one whose functions share
    their words (a dozen ``mobilenet`` variants), the words finding one stored request's
    function is luck more than evidence, and the near stored request speaks instead. The
    median counts twice: the words must find the function asked for and pass over the twins
    around it, and ``typical`` is the evidence for each.
    """
    words = np.clip([c.example_words for c in candidates if c.example is not None], 0.0, 1.0)
    if words.size == 0:
        return 0.0
    return min(1.0, max(0.0, candidates[closest].example_words)) * float(np.median(words)) ** 2


def hybrid(candidates: Sequence[Candidate], *, lexical_weight: float, example_weight: float) -> list[Ranked]:
    """Rank candidates with a fixed lexical weight, best first.

    Each function scores ``(1 - a) * max(cosine, b * example) + a * lexical / best_lexical``.
    The score stays similarity-like: at most 1, and equal to the cosine when no word or
    example adds anything else.

    Args:
        candidates: what ``router.retrieval.candidates.candidates`` found.
        lexical_weight: ``a``, the share of the lexical score, in [0, 1].
        example_weight: ``b``, how much an example's similarity counts against the function's own.
    """
    if not candidates:
        return []
    semantic, _, _ = _semantic(candidates, example_weight)
    lexical = np.fromiter((c.lexical for c in candidates), dtype=np.float64, count=len(candidates))
    return _ranked(candidates, semantic, lexical, lexical_weight)


def _ranked(candidates: Sequence[Candidate], semantic: np.ndarray, lexical: np.ndarray, share: float) -> list[Ranked]:
    best = float(lexical.max())
    scores = (1 - share) * semantic + share * (lexical / best if best > 0 else lexical)
    ranked = [Ranked(c.name, float(score)) for c, score in zip(candidates, scores, strict=True)]
    ranked.sort(key=lambda f: (-f.score, f.name))
    return ranked


def adaptive(
    candidates: Sequence[Candidate], *, example_weight: float, lexical_weight: float = 0.35
) -> tuple[list[Ranked], Weights]:
    """Rank candidates with the lexical share this request's scores give (``lexical_share``).

    Each function scores ``(1 - a) * max(cosine, b * example) + a * lexical / best_lexical``
    with ``a`` chosen for this request.

    Args:
        candidates: what ``router.retrieval.candidates.candidates`` found.
        example_weight: ``b``, how much an example's similarity counts against the function's own.
        lexical_weight: the largest lexical share.

    Returns:
        The ranking, best first, and the weights used.
    """
    if not candidates:
        return [], Weights(dense=1.0, lexical=0.0, usage=0.0)
    semantic, used, usage = _semantic(candidates, example_weight)
    lexical = np.fromiter((c.lexical for c in candidates), dtype=np.float64, count=len(candidates))
    share = lexical_share(semantic, lexical, maximum=lexical_weight, usage=usage if example_weight > 0 else 0.0)
    return _ranked(candidates, semantic, lexical, share), Weights(
        dense=1.0 - share, lexical=share, usage=example_weight if used else 0.0
    )
