"""The same sentence-transformers model run by ONNX Runtime: the same vectors, faster on CPU.

The model is exported once from its local weights into a cache directory (nothing is
downloaded) and checked against the PyTorch model on probe texts; a model whose pipeline
is not transformer + mean/CLS pooling (+ normalise), or whose export disagrees, stays on
PyTorch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from router.embedding.batching import Vectors, length_groups

log = logging.getLogger(__name__)
PROBES = (
    "Find me a flight from Lisbon to Rome next Friday",
    "get_current_weather: Get the current weather in a given location",
    "ok",
)
# Vectors must match PyTorch's this closely (cosine) for the export to be used.
AGREEMENT = 0.999
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _pooling(model_dir: Path) -> str | None:
    """``mean`` or ``cls`` when the pipeline is one ONNX can reproduce exactly, else None."""
    try:
        modules = json.loads((model_dir / "modules.json").read_text())
    except (OSError, ValueError):
        return None
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return None
    pooling_dir = model_dir / next(m["path"] for m in modules if m["type"].endswith("Pooling"))
    config = json.loads((pooling_dir / "config.json").read_text())
    modes = {k for k, v in config.items() if k.startswith("pooling_mode_") and v}
    if modes == {"pooling_mode_mean_tokens"}:
        return "mean"
    return "cls" if modes == {"pooling_mode_cls_token"} else None


def _max_length(model_dir: Path) -> int:
    try:
        return int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, ValueError, KeyError):
        return 256


class OnnxEncoder:
    """Tokenizer + ONNX transformer + pooling + normalisation, no PyTorch at run time."""

    def __init__(self, model_dir: Path, onnx_file: Path, *, pooling: str, threads: int, max_batch: int = 32) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.max_length = _max_length(model_dir)
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(self.max_length)
        self.max_batch = max_batch
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # The arena keeps the peak of the largest batch for the process's life (GBs for long texts).
        options.enable_cpu_mem_arena = False
        self._session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._pooling = pooling
        output = self._session.get_outputs()[0].shape
        self.dimension = int(output[-1])

    def encode(self, texts: list[str]) -> Vectors:
        """Normalised embeddings of ``texts``, in their order.

        Texts run in groups of similar token length: padding a short text to the longest
        one in its batch costs more than batching saves (a random batch of 16 questions
        ran at 0.3x the one-by-one rate here; length-sorted groups at 1.2-1.35x).
        """
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(texts)
        for group in length_groups([len(e.ids) for e in encodings], max_batch=self.max_batch):
            out[group] = self._run([encodings[i] for i in group])
        return out

    def _run(self, encodings: list[Any]) -> Vectors:
        width = max(len(e.ids) for e in encodings)
        shape = (len(encodings), width)
        feeds: dict[str, Any] = {name: np.zeros(shape, dtype=np.int64) for name in _INPUTS}
        for row, e in enumerate(encodings):
            size = len(e.ids)
            feeds["input_ids"][row, :size] = e.ids
            feeds["attention_mask"][row, :size] = e.attention_mask
            feeds["token_type_ids"][row, :size] = e.type_ids
        hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        if self._pooling == "cls":
            pooled = hidden[:, 0]
        else:
            mask = feeds["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.asarray(pooled / np.clip(norms, 1e-12, None), dtype=np.float32)


def _export(model_dir: Path, target: Path) -> None:
    """Export the transformer of ``model_dir`` to ONNX at ``target`` (atomically)."""
    import inspect

    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModel.from_pretrained(str(model_dir)).eval()
    names = [n for n in _INPUTS if n in inspect.signature(model.forward).parameters]

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *args: torch.Tensor) -> torch.Tensor:
            return self.model(**dict(zip(names, args, strict=True))).last_hidden_state  # type: ignore[no-any-return]

    sample = tokenizer(list(PROBES[:2]), return_tensors="pt", padding=True)
    axes = {name: {0: "batch", 1: "tokens"} for name in [*names, "last_hidden_state"]}
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        tmp = Path(scratch) / "model.onnx"
        torch.onnx.export(
            Hidden(),
            tuple(sample[n] for n in names),
            str(tmp),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
        os.replace(tmp, target)


def _reference(model_dir: Path) -> Vectors:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir), device="cpu")
    return np.asarray(model.encode(list(PROBES), normalize_embeddings=True, show_progress_bar=False), dtype=np.float32)


def model_key(model_dir: Path) -> str:
    """The cache folder name of a local model: its weight files (names and sizes) and its location."""
    weights = sorted(p for p in model_dir.iterdir() if p.suffix in (".safetensors", ".bin"))
    key = hashlib.sha256("|".join(f"{p.name}:{p.stat().st_size}" for p in weights).encode())
    key.update(str(model_dir.resolve()).encode())
    return key.hexdigest()[:16]


def load(model_dir: Path, cache_dir: Path, *, threads: int) -> OnnxEncoder | None:
    """The ONNX encoder of ``model_dir``, exported and verified into ``cache_dir`` on first use.

    Args:
        model_dir: a local sentence-transformers model directory.
        cache_dir: where exports are kept, one folder per model.
        threads: ONNX Runtime intra-op threads.

    Returns:
        None when the model cannot be run by ONNX with the same vectors as PyTorch.
    """
    pooling = _pooling(model_dir)
    if pooling is None or not (model_dir / "tokenizer.json").exists():
        return None
    folder = cache_dir / model_key(model_dir)
    onnx_file, verified = folder / "model.onnx", folder / "verified.json"
    try:
        if verified.exists():
            return OnnxEncoder(model_dir, onnx_file, pooling=pooling, threads=threads)
        log.info("exporting the embedding model to ONNX", extra={"model": str(model_dir), "to": str(folder)})
        with warnings.catch_warnings():
            # The exporter's tracer warnings are expected; the agreement check below is the real test.
            warnings.simplefilter("ignore")
            _export(model_dir, onnx_file)
            reference = _reference(model_dir)
        encoder = OnnxEncoder(model_dir, onnx_file, pooling=pooling, threads=threads)
        agreement = float((encoder.encode(list(PROBES)) * reference).sum(axis=1).min())
        if agreement < AGREEMENT:
            raise ValueError(f"ONNX vectors differ from PyTorch's (cosine {agreement:.5f} < {AGREEMENT})")
        verified.write_text(json.dumps({"cosine": agreement, "probes": len(PROBES)}))
        return encoder
    except Exception:
        log.warning("ONNX backend unavailable; using PyTorch", exc_info=True, extra={"model": str(model_dir)})
        shutil.rmtree(folder, ignore_errors=True)
        return None
