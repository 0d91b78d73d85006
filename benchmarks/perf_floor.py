"""The floor of every embedding figure: bare sentence-transformers, fp32 on the CPU, in the benchmark's own process.

Never the router's ``Embedder``: a floor measured through our own wrapper hides what the wrapper
costs (a slower backend chosen by mistake, say). The same texts, the library's own defaults
(``SentenceTransformer(path).encode``, which sorts a batch by length itself), normalised vectors.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.common import progress_bar
from router.embedding import resolve_model

__all__ = ["BareModel", "bare_load_seconds"]

# A fresh interpreter loading the bare library and encoding once: the floor of a start.
_LOAD = (
    "import sys\n"
    "from sentence_transformers import SentenceTransformer\n"
    "SentenceTransformer(sys.argv[1], device='cpu').encode(['warm'], show_progress_bar=False)\n"
)
CHUNK = 512


class BareModel:
    """``SentenceTransformer(path)`` on the CPU in fp32: what the router's figures are compared with.

    Args:
        model: the model name the router is configured with.
    """

    def __init__(self, model: str) -> None:
        from sentence_transformers import SentenceTransformer

        self.location = resolve_model(model)
        self._model: Any = SentenceTransformer(self.location, device="cpu")
        self.encode(["warm-up", "the first calls allocate"])

    def encode(self, texts: Sequence[str], *, batch_size: int | None = None) -> Any:
        """Normalised vectors of ``texts`` (in batches of the library's default size unless ``batch_size``)."""
        sizes = {} if batch_size is None else {"batch_size": batch_size}
        return self._model.encode(list(texts), normalize_embeddings=True, show_progress_bar=False, **sizes)

    def rate(self, texts: Sequence[str], *, label: str) -> float:
        """Texts per second of a batch encode of ``texts`` (in chunks, for a progress bar)."""
        bar = progress_bar(label, len(texts))
        start = time.perf_counter()
        for begin in range(0, len(texts), CHUNK):
            self.encode(texts[begin : begin + CHUNK])
            bar(min(begin + CHUNK, len(texts)), len(texts))
        return len(texts) / (time.perf_counter() - start)

    def one(self, text: str) -> float:
        """Seconds to encode one text."""
        start = time.perf_counter()
        self.encode([text])
        return time.perf_counter() - start

    def one_median(self, text: str, *, repeats: int) -> float:
        """Median seconds over ``repeats`` encodes of one text."""
        runs = sorted(self.one(text) for _ in range(repeats))
        return runs[len(runs) // 2]


def bare_load_seconds(model: str, *, timeout: float = 300.0) -> float:
    """Seconds for a fresh interpreter to load the bare library and model and encode once."""
    start = time.perf_counter()
    subprocess.run(  # noqa: S603
        [sys.executable, "-c", _LOAD, resolve_model(model)], check=True, timeout=timeout, capture_output=True
    )
    return time.perf_counter() - start
