"""The benchmark's simulation of bounded usage examples keeps what the example store keeps."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.bfcl import BfclQuestion
from benchmarks.quality_learning import keep
from router.retrieval import examples as examples_module
from router.retrieval.examples import Example, ExampleStore
from router.storage.client import ClientStorage

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("cap", [3, 8])
def test_the_merge_rule_of_the_simulation_is_the_stores(monkeypatch: pytest.MonkeyPatch, cap: int) -> None:
    rng = np.random.default_rng(7)
    # Requests in clusters, so some fall within the merge similarity of a kept one and some functions fill up.
    centres = rng.normal(size=(6, 32))
    vectors = np.array([centres[i % 6] + rng.normal(scale=0.12 if i % 3 else 0.6, size=32) for i in range(120)])
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    names = ["a", "b", "c"]
    train = [
        BfclQuestion(f"q{i}", "t", ({"role": "user", "content": f"request {i}"},), (names[i % 3 if i % 5 else 0],))
        for i in range(len(vectors))
    ]
    monkeypatch.setattr(examples_module, "MAX_EXAMPLES", cap)
    storage = ClientStorage.in_memory()
    try:
        store = ExampleStore.open(storage, model="test", dimension=32)
        for row, question in enumerate(train):
            store.add("ns", [(Example(question.expected[0], question.text), "hash")], vectors[row : row + 1])
        stored = {(r.payload["name"], int(r.payload["text"].split()[1])) for r in store.records()}
    finally:
        storage.close()

    simulated = keep(train, vectors, cap=cap, rule="merge")
    assert stored == set(simulated)
    assert len(simulated) == len(set(simulated))
    # The cap bound and merging both acted, or the comparison would prove little.
    assert max(sum(1 for name, _ in simulated if name == n) for n in names) == cap
    assert len(simulated) < len(train)
