"""The paths that can run a sentence-transformers model: PyTorch fp32, PyTorch bf16 autocast, ONNX Runtime.

Each is a function from a list of texts to normalised float32 vectors, texts in groups of
similar token length (padding a short text to the longest of its batch costs more than
batching saves). Which path serves which shape of work is chosen in ``selection``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from router.embedding.batching import Vectors, length_groups

__all__ = ["BF16", "ONNX", "TORCH", "TorchModel", "intra_op_threads"]

TORCH, BF16, ONNX = "torch", "torch-bf16", "onnx"


def intra_op_threads(threads: int) -> None:
    """Give PyTorch calls from the calling thread ``threads`` intra-op threads.

    PyTorch keeps the count per calling thread (its OpenMP and MKL settings are thread-local),
    so model calls on two threads can each use part of the cores. Set only when it changes:
    setting it also drops oneDNN's cached kernels.
    """
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


@dataclass
class TorchModel:
    """A loaded ``SentenceTransformer`` with its fp32 and bf16-autocast runs.

    Attributes:
        dimension: the vectors' dimension.
        max_tokens: the longest input the model reads (longer texts are truncated).
    """

    model: Any
    dimension: int
    max_tokens: int
    batch_size: int
    # Releases of transformers that set a fast tokenizer's truncation and padding on its shared
    # Rust object fail ("Already borrowed") when another thread tokenizes meanwhile: model calls
    # on several threads (query lanes, a sync's batches) take turns to tokenize.
    tokenizing: threading.RLock = field(default_factory=threading.RLock)

    def __post_init__(self) -> None:
        # sentence-transformers tokenizes in ``preprocess`` (``tokenize`` in older releases, which
        # newer ones keep as a wrapper of it: hence a re-entrant lock).
        for name in ("preprocess", "tokenize"):
            method = getattr(self.model, name, None)
            if callable(method):
                setattr(self.model, name, self._in_turn(method))

    def _in_turn(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def take_turns(*args: Any, **kwargs: Any) -> Any:
            with self.tokenizing:
                return method(*args, **kwargs)

        return take_turns

    @classmethod
    def load(cls, location: str, *, device: str, threads: int, batch_size: int) -> TorchModel:
        """Load the model at ``location`` (offline) with ``threads`` intra-op threads."""
        import torch
        from sentence_transformers import SentenceTransformer
        from threadpoolctl import threadpool_limits
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        torch.set_num_threads(threads)
        # numpy's OpenBLAS threads spin after each product, waiting for the next one, and take a
        # core from the model: with exact search in memory, routes of a 10k catalog took twice as
        # long. The products beside the model (one query against a few thousand rows) need one.
        threadpool_limits(1, user_api="blas")
        model = SentenceTransformer(location, device=device)
        size = model.get_embedding_dimension()
        if size is None:
            raise ValueError(f"model {location!r} does not report its embedding dimension")
        return cls(model, int(size), int(model.max_seq_length or 256), batch_size)

    def lengths(self, texts: list[str]) -> list[int]:
        """Token counts of ``texts`` as the model reads them (truncated)."""
        with self.tokenizing:
            encoded = self.model.tokenizer(texts, truncation=True, max_length=self.max_tokens)["input_ids"]
        return [len(ids) for ids in encoded]

    def fp32(self, texts: list[str]) -> Vectors:
        """Vectors in fp32, texts grouped by token length."""
        return self._grouped(texts, self._encode)

    def bf16(self, texts: list[str]) -> Vectors:
        """Vectors under bf16 autocast (matrix products in bf16, results back in fp32)."""
        import torch

        def run(batch: list[str]) -> Vectors:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return self._encode(batch)

        return self._grouped(texts, run)

    def runner(self, name: str) -> Callable[[list[str]], Vectors]:
        """The run called ``name`` (``torch`` or ``torch-bf16``)."""
        if name == TORCH:
            return self.fp32
        if name == BF16:
            return self.bf16
        raise ValueError(f"no PyTorch run called {name!r}")

    def _encode(self, batch: list[str]) -> Vectors:
        options = {"normalize_embeddings": True, "convert_to_tensor": True, "show_progress_bar": False}
        vectors = self.model.encode(batch, batch_size=self.batch_size, **options)
        return np.asarray(vectors.float().cpu().numpy(), dtype=np.float32)

    def _grouped(self, texts: list[str], run: Callable[[list[str]], Vectors]) -> Vectors:
        if len(texts) <= 1:
            return run(texts) if texts else np.zeros((0, self.dimension), dtype=np.float32)
        if all(len(a) <= len(b) for a, b in pairwise(texts)):
            # Already sorted by length (catalog batches are): the library's batches pad little as they come.
            return run(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for group in length_groups(self.lengths(texts), max_batch=self.batch_size):
            out[group] = run([texts[i] for i in group])
        return out
