"""What retrieval knows about a function for one request."""

from __future__ import annotations

from dataclasses import dataclass

from router.catalog.functions import FunctionDef


@dataclass(frozen=True)
class ScoredFunction:
    """A function found by a search, with its similarity score."""

    function: FunctionDef
    score: float


@dataclass(frozen=True)
class Ranked:
    """A function's place in a ranking: its name and score (its definition is read once chosen)."""

    name: str
    score: float


@dataclass(frozen=True)
class Candidate:
    """A function a request may want, with every signal retrieval has about it.

    Attributes:
        name: the function's name.
        cosine: cosine similarity of the request to the function's text.
        lexical: the function's BM25 score for the request (0 when no term matches).
        example: cosine similarity of the request to the closest usage example of the
            function, or None when it has none near the request.
        example_text: that example's request text.
        example_runs: how many of the function's stored requests ask the same thing as the
            request (``router.retrieval.examples.Nearest.runs``).
        hash: the content hash of the version the search found ("" when not known).
    """

    name: str
    cosine: float
    lexical: float = 0.0
    example: float | None = None
    example_text: str | None = None
    hash: str = ""
    example_runs: int = 0
