"""Sparse (BM25-like) vectors for functions and queries, computed here so every adapter stores the same.

A function's document is its readable name (twice, as the strongest evidence), its
description and its parameters' names and descriptions; identifiers are split the way people
read them (``get_current_weather``, ``getCurrentWeather`` and ``weather.current`` all give
``get current weather``-like words), stop words dropped and words lightly stemmed. Adjacent
words also form bigram terms, so "final velocity" in a request matches ``final_velocity``
more than two scattered words do, and a whole identifier (``get_current_weather``) is a term
of its own for requests that name a function outright.

Document values carry BM25's saturated term frequency and length normalisation; a query's
values are each term's IDF in the request's own catalog (``Frequencies``), so the engine's dot
product is BM25 over that catalog alone: one tenant's functions never move another's scores.
Term ids are CRC-32 of the term: stable across processes and machines, unlike Python's salted
``hash``.
"""

from __future__ import annotations

import base64
import itertools
import math
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from router.catalog.functions import FunctionDef
from router.storage.base import SparseVector

K1 = 1.2
B = 0.75
# Mean document length (in terms) of BFCL's 1,998 functions; a fixed constant keeps a
# document's vector independent of the rest of its catalog, so only changed functions re-encode.
AVERAGE_LENGTH = 56.0
NAME_WEIGHT = 2

_PARTS = re.compile(r"[^A-Za-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[A-Za-z]+|[0-9]+")
# Tried only where a run of letters and digits starts, and never backtracking into one: a request of one
# long word is read in linear time (backtracking made 20,000 letters take 4.6 s).
_IDENTIFIER = re.compile(r"(?<![A-Za-z0-9])(?:[A-Za-z][A-Za-z0-9]*+(?:[._][A-Za-z0-9]++)++|[a-z]++[A-Z][A-Za-z0-9]*+)")
_STOP_WORDS = (
    "a an and are as at be by can could did do does for from get given has have how i in into is it its me my of on "
    "or our please should that the this to was we were what when where which who whom why will with would you your"
)
_STOP = frozenset(_STOP_WORDS.split())
# From a negation to the end of its clause.
_DENIED = re.compile(r"\b(?:not|never|cannot|\w+n't)\b[^.;:,!?()\n]*", re.IGNORECASE)
_SUFFIXES = (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""))


def split_identifier(text: str) -> list[str]:
    """The words of a text or identifier: ``getHTTPResponse_v2`` gives ``get HTTP Response v 2``."""
    words: list[str] = []
    for part in _PARTS.split(text):
        for piece in _CAMEL.sub(" ", part).split():
            words.extend(_WORD.findall(piece))
    return words


def _stem(word: str) -> str:
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                break
            word = word[: -len(suffix)] + replacement
            break
    # "calculate", "calculated" and "calculates" meet at "calculat".
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def terms(text: str) -> list[str]:
    """Lower-cased, stemmed words of ``text`` without stop words, in order."""
    lowered = (word.lower() for word in split_identifier(text))
    return [_stem(word) for word in lowered if word not in _STOP]


def _bigrams(words: Sequence[str]) -> list[str]:
    return [f"{a} {b}" for a, b in itertools.pairwise(words)]


def term_id(term: str) -> int:
    """The stable index of a term in sparse vectors (CRC-32 of its UTF-8 bytes)."""
    return zlib.crc32(term.encode())


def query_terms(text: str) -> list[str]:
    """The distinct terms of a request: words, bigrams of adjacent words, whole identifiers."""
    words = terms(text)
    return list(dict.fromkeys([*words, *_bigrams(words), *(m.lower() for m in _IDENTIFIER.findall(text))]))


@dataclass(frozen=True)
class Frequencies:
    """How many functions of one catalog hold each term: what BM25's IDF reads.

    Attributes:
        functions: the catalog's functions counted.
        terms: the term ids held by at least one of them, sorted.
        counts: how many functions hold each of ``terms``.
    """

    functions: int
    terms: npt.NDArray[np.uint32]
    counts: npt.NDArray[np.int64]

    @classmethod
    def of(cls, documents: Sequence[npt.NDArray[np.uint32]]) -> Frequencies:
        """The frequencies over ``documents``, each the distinct term ids of one function."""
        every = np.concatenate(documents) if documents else np.zeros(0, dtype=np.uint32)
        terms, counts = np.unique(every, return_counts=True)
        return cls(len(documents), terms.astype(np.uint32), counts.astype(np.int64))

    def changed(
        self, removed: Sequence[npt.NDArray[np.uint32]], added: Sequence[npt.NDArray[np.uint32]]
    ) -> Frequencies:
        """The frequencies once the ``removed`` documents are gone and the ``added`` ones are counted."""
        if not removed and not added:
            return self
        ids = np.concatenate([self.terms, *removed, *added])
        weights = np.concatenate(
            [self.counts, *(-np.ones(len(d), np.int64) for d in removed), *(np.ones(len(d), np.int64) for d in added)]
        )
        terms, inverse = np.unique(ids, return_inverse=True)
        counts = np.bincount(inverse, weights=weights, minlength=len(terms)).round().astype(np.int64)
        held = counts > 0
        functions = self.functions - len(removed) + len(added)
        return Frequencies(functions, terms[held].astype(np.uint32), counts[held])

    def idf(self, ids: Sequence[int]) -> list[float | None]:
        """Each term's IDF, ``ln(1 + (N - n + 0.5) / (n + 0.5))`` as Qdrant computes it; None where none holds it."""
        if not ids or not len(self.terms):
            return [None] * len(ids)
        wanted = np.asarray(ids, dtype=np.uint32)
        at = np.minimum(np.searchsorted(self.terms, wanted), len(self.terms) - 1)
        held = self.terms[at] == wanted
        total = self.functions
        return [
            math.log(1 + (total - int(n) + 0.5) / (int(n) + 0.5)) if ok else None
            for ok, n in zip(held.tolist(), self.counts[at].tolist(), strict=True)
        ]


def query_vector(text: str, frequencies: Frequencies | None = None) -> SparseVector:
    """A request's sparse vector: each distinct term once.

    With its catalog's ``frequencies``, a term weighs its IDF there and a term no function holds
    is left out; without (a store whose engine applies the IDF itself), every term weighs 1.
    """
    ids = sorted({term_id(term) for term in query_terms(text)})
    if frequencies is None:
        return SparseVector(indices=ids, values=[1.0] * len(ids))
    weighed = [(i, w) for i, w in zip(ids, frequencies.idf(ids), strict=True) if w is not None]
    return SparseVector(indices=[i for i, _ in weighed], values=[w for _, w in weighed])


def pack_terms(vector: SparseVector) -> str:
    """A document vector's term ids, as kept in its function's payload (base64 of little-endian uint32)."""
    return base64.b64encode(np.asarray(vector.indices, dtype="<u4").tobytes()).decode("ascii")


def unpack_terms(text: str) -> npt.NDArray[np.uint32]:
    """What ``pack_terms`` made."""
    return np.frombuffer(base64.b64decode(text), dtype="<u4").astype(np.uint32)


def _parameter_terms(parameters: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    properties = parameters.get("properties", {})
    if not isinstance(properties, Mapping):
        return found
    for name, schema in properties.items():
        words = terms(str(name))
        found += words + _bigrams(words)
        description = schema.get("description") if isinstance(schema, Mapping) else None
        if isinstance(description, str):
            found += terms(affirmed(description))
    return found


def affirmed(text: str) -> str:
    """``text`` without what it denies: "Flight status; not for finding or booking flights." keeps "Flight status;".

    Descriptions often say what a function is not for, and a word match cannot tell "books
    flights" from "does not book flights"; the denied words would draw exactly the wrong requests.
    """
    return _DENIED.sub(" ", text)


def document_terms(function: FunctionDef) -> list[str]:
    """A function's terms with repeats: name (weighted), description, parameters."""
    name = terms(function.name)
    description = terms(affirmed(function.description))
    return [
        *(name + _bigrams(name)) * NAME_WEIGHT,
        function.name.lower(),
        *description,
        *_bigrams(description),
        *_parameter_terms(function.parameters),
    ]


def _weights(counts: Iterable[tuple[str, int]], length: int) -> dict[int, float]:
    norm = K1 * (1 - B + B * length / AVERAGE_LENGTH)
    weights: dict[int, float] = {}
    for term, count in counts:
        index = term_id(term)
        # Two terms sharing a CRC (rare) add up, as one term with both counts would.
        weights[index] = weights.get(index, 0.0) + count * (K1 + 1) / (count + norm)
    return weights


def document_vector(function: FunctionDef) -> SparseVector:
    """A function's sparse vector: BM25 term-frequency weights of its ``document_terms``."""
    found = document_terms(function)
    weights = _weights(Counter(found).items(), len(found))
    ids = sorted(weights)
    return SparseVector(indices=ids, values=[weights[i] for i in ids])
