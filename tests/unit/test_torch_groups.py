"""How the PyTorch backend splits a call into model batches (a fake model records them)."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import torch

from router.embedding.backends import TorchModel


class FakeModel:
    """Counts words as tokens; each text's vector is a one-hot of its word count."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.device = torch.device("cpu")

    def tokenizer(self, texts: list[str], **_options: Any) -> dict[str, list[list[int]]]:
        return {"input_ids": [[0] * len(t.split()) for t in texts]}

    def tokenize(self, texts: list[str]) -> dict[str, Any]:
        return {"texts": texts}

    def __call__(self, features: dict[str, Any]) -> dict[str, torch.Tensor]:
        return {"sentence_embedding": self.encode(features["texts"])}

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


class SharedTokenizer(FakeModel):
    """Records how many threads are inside the tokenizer at once."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = self.most_inside = 0

    def _enter(self) -> None:
        self.inside += 1
        self.most_inside = max(self.most_inside, self.inside)
        time.sleep(0.002)
        self.inside -= 1

    def tokenizer(self, texts: list[str], **options: Any) -> dict[str, list[list[int]]]:
        self._enter()
        return super().tokenizer(texts, **options)

    def preprocess(self, texts: list[str]) -> list[str]:
        self._enter()
        return texts

    def tokenize(self, texts: list[str]) -> list[str]:
        return self.preprocess(texts)  # newer releases keep it as a wrapper


def test_threads_take_turns_to_tokenize() -> None:
    fake = SharedTokenizer()
    torch_model = TorchModel(fake, dimension=32, max_tokens=256, batch_size=16)

    def hammer(way: int) -> None:
        for _ in range(20):
            if way == 0:
                torch_model.lengths(["a b", "c"])
            elif way == 1:
                fake.preprocess(["a b"])
            else:
                fake.tokenize(["a b"])

    threads = [threading.Thread(target=hammer, args=(i % 3,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fake.most_inside == 1
