"""How the PyTorch backend splits a call into model batches (a fake model records them)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from router.embedding.backends import TorchModel


class FakeModel:
    """Counts words as tokens; each text's vector is a one-hot of its word count."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def tokenizer(self, texts: list[str], **_options: Any) -> dict[str, list[list[int]]]:
        return {"input_ids": [[0] * len(t.split()) for t in texts]}

    def encode(self, batch: list[str], **_options: Any) -> torch.Tensor:
        self.calls.append(list(batch))
        out = torch.zeros((len(batch), 32))
        for row, text in enumerate(batch):
            out[row, len(text.split())] = 1.0
        return out


def model() -> tuple[TorchModel, FakeModel]:
    fake = FakeModel()
    return TorchModel(fake, dimension=32, max_tokens=256, batch_size=16), fake


def words(n: int, tag: str) -> str:
    return " ".join([tag] * n)


def test_mixed_lengths_go_to_the_model_in_length_groups_and_come_back_in_order() -> None:
    torch_model, fake = model()
    texts = [words(3, "a"), words(20, "b"), words(3, "c"), words(21, "d"), words(4, "e")]
    vectors = torch_model.fp32(texts)
    assert [int(np.argmax(v)) for v in vectors] == [3, 20, 3, 21, 4]
    assert fake.calls == [[texts[0], texts[2], texts[4]], [texts[1], texts[3]]]


def test_texts_sorted_by_length_go_as_they_come() -> None:
    # Catalog batches arrive sorted: the library batches them with little padding itself.
    torch_model, fake = model()
    texts = [words(n, "x") for n in (2, 2, 5, 9, 17, 30)]
    torch_model.fp32(texts)
    assert fake.calls == [texts]


def test_bf16_gives_float32_vectors() -> None:
    torch_model, _fake = model()
    vectors = torch_model.bf16([words(2, "a"), words(7, "b"), words(3, "c")])
    assert vectors.dtype == np.float32
    assert [int(np.argmax(v)) for v in vectors] == [2, 7, 3]
