"""Reading an ``/embeddings`` answer: its vectors checked, its token usage, and what a refusal says."""

from __future__ import annotations

import base64
import email.utils
import time
from typing import Any

import httpx
import numpy as np

from router.embedding.batching import Vectors
from router.embedding.endpoint import EmbeddingInvalid


def checked(answer: Any, count: int, dimension: int | None) -> Vectors:
    """One normalised row per text, in input order, from an ``/embeddings`` answer."""
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list):
        raise EmbeddingInvalid("answered without a `data` list")
    if len(data) != count:
        raise EmbeddingInvalid(f"answered {len(data)} vectors for {count} texts")
    rows: dict[int, Any] = {}
    for position, item in enumerate(data):
        index = item.get("index", position) if isinstance(item, dict) else None
        if not isinstance(index, int) or not 0 <= index < count or index in rows:
            raise EmbeddingInvalid(f"answered data[{position}] with index {index!r}, not one of 0..{count - 1} once")
        rows[index] = item.get("embedding")
    vectors = [_vector(rows[i], i) for i in range(count)]
    sizes = {len(v) for v in vectors}
    expected = dimension if dimension is not None else len(vectors[0])
    if sizes != {expected}:
        raise EmbeddingInvalid(f"answered vectors of {sorted(sizes)} dimensions, expected {expected}")
    matrix = np.asarray(vectors, dtype=np.float32).reshape(count, expected)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    if not np.isfinite(matrix).all() or (norms == 0).any():
        raise EmbeddingInvalid("answered a vector that is zero or not finite")
    normalised: Vectors = matrix / norms
    return normalised


def _vector(embedding: Any, index: int) -> Vectors:
    if isinstance(embedding, str):  # encoding_format "base64": little-endian float32
        try:
            return np.frombuffer(base64.b64decode(embedding), dtype="<f4").astype(np.float32)
        except ValueError as exc:
            raise EmbeddingInvalid(f"answered index {index} with an embedding that is not base64") from exc
    if not isinstance(embedding, list) or not embedding:
        raise EmbeddingInvalid(f"answered index {index} without an embedding")
    try:
        return np.asarray(embedding, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingInvalid(f"answered index {index} with an embedding that is not numbers") from exc


def tokens_counted(answer: dict[str, Any]) -> int:
    """The tokens the service says it read (``usage``), 0 when it does not say."""
    usage = answer.get("usage")
    if not isinstance(usage, dict):
        return 0
    tokens = usage.get("prompt_tokens", usage.get("total_tokens", 0))
    return tokens if isinstance(tokens, int) and tokens >= 0 else 0


def retry_after(response: httpx.Response) -> float | None:
    """Seconds the service asks to wait: ``Retry-After`` in seconds or as an HTTP date (or ``retry-after-ms``)."""
    millis = response.headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def reason(response: httpx.Response) -> str:
    """The service's own message (OpenAI's ``{"error": {"message"}}``), cut short; never the request."""
    try:
        error = response.json().get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        message = None
    text = str(message) if message else response.text or response.reason_phrase
    return text[:200]
