"""The paths that can run a sentence-transformers model: PyTorch fp32 (eager or traced), bf16 autocast, ONNX Runtime.

Each is a function from a list of texts to normalised float32 vectors, texts in groups of
similar token length (padding a short text to the longest of its batch costs more than
batching saves). Which path serves which shape of work is chosen in ``selection``.

The traced path runs the transformer as one TorchScript graph (``torch.jit.trace``), the same
operators on the same weights without a Python call per layer: a short query spends a quarter
of its eager time dispatching operators from Python, each dispatch waiting for the
interpreter lock while another thread (a route's search, the event loop) holds it.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from router.embedding.batching import Vectors, length_groups
from router.embedding.selection import AGREEMENT

__all__ = ["BF16", "BF16_LENGTH_STEP", "ONNX", "TORCH", "TORCH_RUNS", "TRACED", "TorchModel", "intra_op_threads"]

TORCH, TRACED, BF16, ONNX = "torch", "torch-traced", "torch-bf16", "onnx"
TORCH_RUNS = frozenset({TORCH, TRACED, BF16})
# The transformer's inputs a traced graph takes, in this order, when the tokenizer gives them.
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Under bf16 autocast oneDNN keeps kernels, and the memory they hold, for every sequence length
# it meets: over 400 micro-batches of new lengths RSS grew by 550 MB (108 MB in fp32). Padding
# lengths to a multiple of this keeps the lengths few (growth as in fp32); the attention mask
# leaves the vectors unchanged.
BF16_LENGTH_STEP = 16


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
    """A loaded ``SentenceTransformer`` with its fp32 (eager and traced) and bf16-autocast runs.

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
    _graph: Any = field(default=None, init=False, repr=False, compare=False)  # made by ``trace``
    _graph_inputs: tuple[str, ...] = field(default=(), init=False, repr=False, compare=False)
    _tracing: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

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
            if getattr(self.model, "default_prompt_name", None):  # the library adds the prompt
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    return self._encode(batch)
            return self._in_batches(batch, embedded, multiple=BF16_LENGTH_STEP)

        def embedded(features: dict[str, Any]) -> Any:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return self.model(features)["sentence_embedding"]

        return self._grouped(texts, run)

    def traced(self, texts: list[str]) -> Vectors:
        """Vectors in fp32, the transformer traced into one graph, the rest of the pipeline as the library runs it."""
        return self._grouped(texts, self._encode_traced)

    def runner(self, name: str) -> Callable[[list[str]], Vectors]:
        """The run called ``name`` (``torch``, ``torch-traced`` or ``torch-bf16``)."""
        runs = {TORCH: self.fp32, TRACED: self.traced, BF16: self.bf16}
        if name not in runs:
            raise ValueError(f"no PyTorch run called {name!r}")
        return runs[name]

    def trace(self) -> None:
        """Trace the transformer (once) and check it against the eager run.

        Raises:
            ValueError: this model's pipeline is not one the traced run reproduces (a default
                prompt, hidden states of every layer, another first module), or the graph's
                vectors on texts of other lengths differ from the eager ones.
        """
        if self._graph is not None:
            return
        with self._tracing:
            if self._graph is None:
                self._graph_inputs, self._graph = self._checked_graph()

    def _checked_graph(self) -> tuple[tuple[str, ...], Any]:
        import torch

        first = self.model[0]
        if getattr(self.model, "default_prompt_name", None):
            raise ValueError("the model prepends a default prompt, which the traced run does not")
        if getattr(first, "module_output_name", None) != "token_embeddings" or not hasattr(first, "auto_model"):
            raise ValueError("the model's first module is not a text transformer giving token embeddings")
        if getattr(getattr(first.auto_model, "config", None), "output_hidden_states", False):
            raise ValueError("the model's later modules read every layer's hidden states")
        probe = self._features(["a probe text, longer than the other one", "short"])
        names = tuple(n for n in _INPUTS if n in probe)
        if "input_ids" not in names:
            raise ValueError("the model's tokenizer gives no input_ids")
        with torch.inference_mode(), warnings.catch_warnings():
            # The tracer's notes on Python values it fixed: the check below is what decides.
            warnings.simplefilter("ignore")
            graph = torch.jit.trace(  # type: ignore[no-untyped-call]
                _hidden_states(first.auto_model, names), tuple(probe[n] for n in names), check_trace=False
            )
        check = ["one", "a check text of another length and batch", "and a third, of middling length here"]
        traced, eager = self._run_graph(graph, names, check), self._encode(check)
        cosine = float(np.min(np.sum(traced * eager, axis=1)))
        if traced.shape != eager.shape or cosine < AGREEMENT:
            raise ValueError(f"the traced graph's vectors differ from the eager run's (cosine {cosine:.6f})")
        return names, graph

    def _encode_traced(self, batch: list[str]) -> Vectors:
        self.trace()
        return self._run_graph(self._graph, self._graph_inputs, batch)

    def _run_graph(self, graph: Any, names: tuple[str, ...], batch: list[str]) -> Vectors:
        def embedded(features: dict[str, Any]) -> Any:
            features["token_embeddings"] = graph(*(features[n] for n in names))
            for module in list(self.model)[1:]:  # pooling, normalising, dense layers: few operators
                features = module(features)
            return features["sentence_embedding"]

        return self._in_batches(batch, embedded)

    def _in_batches(
        self, batch: list[str], embedded: Callable[[dict[str, Any]], Any], *, multiple: int | None = None
    ) -> Vectors:
        """Normalised vectors of ``batch``, ``embedded`` giving the sentence embeddings of each model batch's inputs."""
        import torch

        out = []
        for start in range(0, len(batch), self.batch_size):
            features = self._features(batch[start : start + self.batch_size], multiple=multiple)
            with torch.inference_mode():
                vectors = torch.nn.functional.normalize(embedded(features).float(), p=2, dim=1)
            out.append(vectors.cpu().numpy())
        return np.asarray(np.concatenate(out), dtype=np.float32)

    def _features(self, texts: list[str], *, multiple: int | None = None) -> dict[str, Any]:
        """The model's inputs for ``texts``, lengths padded to a multiple of ``multiple`` when given."""
        from sentence_transformers.util import batch_to_device

        preprocess = getattr(self.model, "preprocess", None)
        padding = {} if multiple is None else {"processing_kwargs": {"text": {"pad_to_multiple_of": multiple}}}
        with self.tokenizing:
            # Releases before ``preprocess`` tokenize only, padding to the longest text.
            features = self.model.tokenize(texts) if preprocess is None else preprocess(texts, **padding)
        return dict(batch_to_device(features, self.model.device))

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


def _hidden_states(model: Any, names: tuple[str, ...]) -> Any:
    """``model`` as a module of positional tensors (``names``, in order) giving its last hidden states."""
    import torch

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            hidden: torch.Tensor = self.model(**dict(zip(names, tensors, strict=True)), return_dict=False)[0]
            return hidden

    return Hidden().eval()
