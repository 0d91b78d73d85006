"""What the retrieval-quality benchmark reads and how it scores rankings.

- ``load_conversations``: BFCL's ``multi_turn_base`` conversations, each turn with the user's
  message and the names of the functions its ground truth calls (``cd(folder='x')`` -> ``cd``).
  ``benchmarks.bfcl`` loads single-turn questions only; this adds the multi-turn ones.
- ``split``: the seeded 50/50 train/test split of questions for usage learning.
- ``Scores``: R@k, MRR@10, nDCG@5, Complete@3, Complete@5 and Complete@10 by function *name*.

Recall@k counts a question as found when any function it expects is in the top k (one right
tool in view is what lets the model start); Complete@k asks for all of them in the top k, and
is reported for multi-function questions only.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from benchmarks.bfcl import FILE_PREFIX, BfclQuestion, data_dir, sanitise_name

T = TypeVar("T")
KS = (1, 3, 5, 10)
COMPLETE_KS = (3, 5, 10)
MULTI_TURN = "multi_turn_base"
_CALL = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*\(")


@dataclass(frozen=True)
class Turn:
    """One turn of a conversation: what the user said and which functions answer it."""

    text: str
    expected: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    """A multi-turn conversation of BFCL."""

    id: str
    turns: tuple[Turn, ...]


def _called(calls: Iterable[Any]) -> tuple[str, ...]:
    names = [sanitise_name(m.group(1)) for call in calls if isinstance(call, str) and (m := _CALL.match(call))]
    return tuple(dict.fromkeys(names))


def _lines(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_conversations(root: Path | None = None) -> list[Conversation]:
    """``multi_turn_base``: 200 conversations, 731 turns with at least one expected call."""
    root = root or data_dir()
    answers = {
        str(a["id"]): a["ground_truth"] for a in _lines(root / "possible_answer" / f"{FILE_PREFIX}{MULTI_TURN}.json")
    }
    conversations = []
    for record in _lines(root / f"{FILE_PREFIX}{MULTI_TURN}.json"):
        turns = []
        for messages, calls in zip(record["question"], answers[str(record["id"])], strict=True):
            text = "\n".join(str(m["content"]) for m in messages if m.get("role") == "user")
            turns.append(Turn(text, _called(calls)))
        conversations.append(Conversation(str(record["id"]), tuple(turns)))
    return conversations


def split(items: Sequence[T], *, seed: int = 0) -> tuple[list[T], list[T]]:
    """A seeded 50/50 (train, test) split."""
    order = list(items)
    random.Random(seed).shuffle(order)
    half = len(order) // 2
    return order[:half], order[half:]


@dataclass
class Scores:
    """Ranking metrics by function name, accumulated question by question."""

    count: int = 0
    hits: dict[int, int] = field(default_factory=lambda: dict.fromkeys(KS, 0))
    reciprocal: float = 0.0
    ndcg: float = 0.0
    multi: int = 0
    complete: dict[int, int] = field(default_factory=lambda: dict.fromkeys(COMPLETE_KS, 0))

    def add(self, ranked: Sequence[str], expected: Sequence[str]) -> None:
        """Score one ranking (names, best first) against the expected names."""
        wanted = set(expected)
        self.count += 1
        for k in KS:
            self.hits[k] += bool(wanted.intersection(ranked[:k]))
        first = next((i for i, name in enumerate(ranked[:10]) if name in wanted), None)
        self.reciprocal += 0.0 if first is None else 1 / (first + 1)
        dcg = sum(1 / math.log2(i + 2) for i, name in enumerate(ranked[:5]) if name in wanted)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(len(wanted), 5)))
        self.ndcg += dcg / ideal if ideal else 0.0
        if len(wanted) > 1:
            self.multi += 1
            for k in COMPLETE_KS:
                self.complete[k] += wanted <= set(ranked[:k])

    def recall(self, k: int) -> float:
        """Share of questions with an expected function in the top ``k``."""
        return self.hits[k] / self.count if self.count else 0.0

    def completed(self, k: int) -> float | None:
        """Share of multi-function questions with every expected function in the top ``k`` (None without any)."""
        return self.complete[k] / self.multi if self.multi else None

    def row(self) -> dict[str, float | None]:
        """Every metric by column name (Complete@k is None without multi-function questions)."""
        n = self.count or 1
        figures: dict[str, float | None] = {f"R@{k}": self.recall(k) for k in KS}
        figures["MRR@10"] = self.reciprocal / n
        figures["nDCG@5"] = self.ndcg / n
        for k in COMPLETE_KS:
            figures[f"Complete@{k}"] = self.completed(k)
        return figures


def score_all(rankings: Mapping[str, Sequence[str]], questions: Iterable[BfclQuestion]) -> Scores:
    """Scores of rankings keyed by question id."""
    scores = Scores()
    for question in questions:
        scores.add(rankings[question.id], question.expected)
    return scores
