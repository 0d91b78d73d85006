"""Loading the backends an embedder needs: forced by setting, cached from an earlier measurement, or measured now."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from router.embedding import selection
from router.embedding.backends import BF16, ONNX, TORCH, TORCH_RUNS, TRACED, TorchModel, intra_op_threads
from router.embedding.batching import Vectors
from router.embedding.selection import BackendChoice

__all__ = ["FORCED", "Loaded", "load_backends"]

log = logging.getLogger(__name__)
Run = Callable[[list[str]], Vectors]
# ROUTER_EMBEDDING_BACKEND values that force one backend for every shape.
FORCED = {"torch": TORCH, "traced": TRACED, "bf16": BF16, "onnx": ONNX}


@dataclass
class Loaded:
    """The run of each shape (``query``, ``batch``, ``catalog``) and how they were chosen."""

    runs: dict[str, Run]
    choice: BackendChoice
    dimension: int
    max_tokens: int

    @property
    def intra_op(self) -> Callable[[int], None] | None:
        """Sets the calling thread's intra-op threads for its next runs.

        None when a query shape runs where that cannot change per call (ONNX Runtime's sessions fix it).
        """
        queries = {self.choice.backends[shape] for shape in ("query", "batch")}
        return intra_op_threads if queries <= TORCH_RUNS else None


def load_backends(
    location: Path,
    *,
    backend: str,
    device: str,
    threads: int,
    batch_size: int,
    cache_dir: Path,
    remeasure: bool = False,
) -> Loaded:
    """Load what ``backend`` asks for; ``auto`` uses the cached choice for this model and CPU or measures one.

    Args:
        location: the model directory (or a name sentence-transformers resolves).
        backend: ``auto``, ``torch``, ``traced``, ``bf16`` or ``onnx``.
        device: the torch device; off the CPU only PyTorch fp32 is used.
        threads: inference threads.
        batch_size: texts per forward pass.
        cache_dir: where ONNX exports and measured choices are kept.
        remeasure: measure even when a choice is cached (``router warm``).

    Raises:
        ValueError: ``onnx`` forced for a model its export cannot reproduce.
    """
    if backend != "auto":
        if backend not in FORCED:
            raise ValueError(f"unknown embedding backend {backend!r}; choose auto, {', '.join(FORCED)}")
        return _forced(
            location, FORCED[backend], device=device, threads=threads, batch_size=batch_size, cache_dir=cache_dir
        )
    if device != "cpu" or not location.is_dir():
        return _forced(location, TORCH, device=device, threads=threads, batch_size=batch_size, cache_dir=cache_dir)
    from router.embedding import onnx_backend

    fingerprint = selection.cpu_fingerprint(threads=threads)
    path = (
        cache_dir
        / onnx_backend.model_key(location)
        / f"backends-{selection.cache_key(str(location), fingerprint)}.json"
    )
    cached = None if remeasure else selection.load_choice(path, fingerprint)
    if cached is not None:
        loaded = _from_choice(location, cached, threads=threads, batch_size=batch_size, cache_dir=cache_dir)
        if loaded is not None:
            log.info("embedding backends (cached choice)", extra={"backends": cached.backends, "from": str(path)})
            return loaded
    torch_model = TorchModel.load(str(location), device="cpu", threads=threads, batch_size=batch_size)
    candidates: dict[str, Run] = {TORCH: torch_model.fp32}
    rejected: dict[str, str] = {}
    try:
        torch_model.trace()
        candidates[TRACED] = torch_model.traced
    except Exception as exc:  # any model the tracer cannot follow stays on the eager runs
        rejected[TRACED] = f"the transformer cannot be traced: {exc}"
    if selection.cpu_supports_bf16(selection.cpu_flags(selection.cpuinfo())):
        candidates[BF16] = torch_model.bf16
    else:
        rejected[BF16] = "the CPU has no bf16 instructions (amx_bf16, avx512_bf16)"
    onnx = onnx_backend.load(location, cache_dir, threads=threads)
    if onnx is not None:
        candidates[ONNX] = onnx.encode
    else:
        rejected[ONNX] = "no export of this model gives the PyTorch vectors"
    log.info("timing embedding backends", extra={"candidates": sorted(candidates)})
    measured = selection.select(candidates, selection.workloads(batch_size=batch_size))
    choice = BackendChoice(
        measured.backends, measured.timings_ms, measured.agreement, {**rejected, **measured.rejected}
    )
    selection.save_choice(path, choice, fingerprint)
    log.info(
        "embedding backends chosen",
        extra={"backends": choice.backends, "timings_ms": choice.timings_ms, "rejected": choice.rejected},
    )
    runs = {shape: candidates[name] for shape, name in choice.backends.items()}
    dimension, max_tokens = torch_model.dimension, torch_model.max_tokens
    del candidates, onnx, torch_model  # a backend chosen for no shape is not kept
    _release_memory()
    return Loaded(runs, choice, dimension, max_tokens)


def _release_memory() -> None:
    """Hand back to the system what the candidates not chosen held (glibc keeps freed memory otherwise)."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _forced(location: Path, name: str, *, device: str, threads: int, batch_size: int, cache_dir: Path) -> Loaded:
    choice = BackendChoice.forced(name)
    if name == ONNX:
        from router.embedding import onnx_backend

        onnx = onnx_backend.load(location, cache_dir, threads=threads) if location.is_dir() else None
        if onnx is None:
            raise ValueError(f"model {str(location)!r} cannot run on the ONNX backend with the same vectors")
        return Loaded(dict.fromkeys(selection.SHAPES, onnx.encode), choice, onnx.dimension, onnx.max_length)
    if name == BF16 and not selection.cpu_supports_bf16(selection.cpu_flags(selection.cpuinfo())):
        log.warning("bf16 forced on a CPU without bf16 instructions: it is emulated, and slow")
    model = TorchModel.load(str(location), device=device, threads=threads, batch_size=batch_size)
    if name == TRACED:
        model.trace()  # a model the tracer cannot follow fails at start-up, not on its first route
    return Loaded(dict.fromkeys(selection.SHAPES, model.runner(name)), choice, model.dimension, model.max_tokens)


def _from_choice(
    location: Path, choice: BackendChoice, *, threads: int, batch_size: int, cache_dir: Path
) -> Loaded | None:
    """Load only the backends a cached choice names; None when one of them cannot load any more."""
    names = set(choice.backends.values())
    runs: dict[str, Run] = {}
    dimension = max_tokens = 0
    if names & TORCH_RUNS:
        model = TorchModel.load(str(location), device="cpu", threads=threads, batch_size=batch_size)
        if TRACED in names:
            try:
                model.trace()  # a graph that no longer reproduces the eager vectors sends us back to measuring
            except Exception:
                log.warning("the cached choice's traced run no longer traces: measuring again", exc_info=True)
                return None
        runs.update({name: model.runner(name) for name in names & TORCH_RUNS})
        dimension, max_tokens = model.dimension, model.max_tokens
    if ONNX in names:
        from router.embedding import onnx_backend

        onnx = onnx_backend.load(location, cache_dir, threads=threads)
        if onnx is None:
            return None
        runs[ONNX] = onnx.encode
        dimension, max_tokens = onnx.dimension, onnx.max_length
    if set(runs) != names:
        return None
    return Loaded({shape: runs[name] for shape, name in choice.backends.items()}, choice, dimension, max_tokens)
