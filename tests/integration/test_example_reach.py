"""Each space reads its usage examples' cosines on its own model's scale (embedded Qdrant)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from router.retrieval.examples import Example, ExampleStore
from router.retrieval.voting import DEFAULT_REACH, Reach
from router.server.embedding_settings import EmbeddingSettings
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings
from router.storage.edge import EdgeStorage

pytestmark = pytest.mark.integration


def at(cosine: float) -> np.ndarray:
    """A unit vector at ``cosine`` from the first axis."""
    return np.array([[cosine, np.sqrt(1 - cosine**2), 0.0, 0.0]], dtype=np.float32)


@pytest.mark.parametrize(("reach", "kept"), [(DEFAULT_REACH, 1), (Reach(0.9), 2)])
def test_requests_merge_only_as_close_as_the_models_own_same_request(tmp_path: Path, reach: Reach, kept: int) -> None:
    # 0.97 is a near-duplicate for all-MiniLM-L6-v2 (merged from 0.95); for a model whose same request
    # is 0.9 it reads 0.88, two requests; 0.998 is the same request in either.
    storage = EdgeStorage(tmp_path / "data")
    try:
        store = ExampleStore.open(storage, model="m", dimension=4, reach=reach)
        for text, cosine in (("first", 1.0), ("near", 0.97), ("same", 0.998)):
            store.add("ns", [(Example("book_hotel", text), "h")], at(cosine))
        assert store.count("ns") == kept
    finally:
        storage.close()


async def test_the_setting_reaches_the_default_spaces_examples(tmp_path: Path) -> None:
    settings = Settings(embedding=EmbeddingSettings(same_request=0.8), storage=StorageSettings(data=tmp_path / "data"))
    runtime = Runtime(settings)
    await runtime.start()
    try:
        examples = runtime.service.index.store.examples
        assert examples.reach == Reach(0.8)
        assert not examples.reach.widens
    finally:
        await runtime.stop()


def test_a_request_replaces_its_near_duplicate_kept_for_an_older_version(tmp_path: Path) -> None:
    # Kept beside the old version's copy, the new request and its next paraphrase would count as runs
    # that agree; replaced, each version keeps the request once.
    storage = EdgeStorage(tmp_path / "data")
    try:
        store = ExampleStore.open(storage, model="m", dimension=4)
        store.add("ns", [(Example("book_hotel", "first"), "old")], at(1.0))
        store.add("ns", [(Example("book_hotel", "near"), "new")], at(0.97))
        store.add("ns", [(Example("book_hotel", "again"), "new")], at(0.99))
        assert store.texts("ns", "book_hotel") == ["near"]
        assert store.nearest("ns", at(1.0)[0].tolist(), limit=5)["book_hotel"].hash == "new"
    finally:
        storage.close()


def test_posts_at_once_each_keep_what_their_run_called(tmp_path: Path) -> None:
    # Each run's later post joins its step to the kept example: read, then written. Done at once
    # from several threads (posts run their storage calls in threads), none may lose another's.
    storage = EdgeStorage(tmp_path / "data")
    try:
        store = ExampleStore.open(storage, model="m", dimension=4)
        store.add("ns", [(Example("search_hotels", "find a hotel"), "h")], at(1.0))
        steps = [f"step_{i}" for i in range(16)]
        start = threading.Barrier(len(steps))

        def post(step: str) -> None:
            start.wait()
            store.join("ns", [(Example("search_hotels", "find a hotel", (step,)), "h")], at(0.999))

        with ThreadPoolExecutor(len(steps)) as pool:
            list(pool.map(post, steps))

        [kept] = store.page("ns", limit=10)
        assert sorted(kept.payload["with"]) == sorted(steps)
    finally:
        storage.close()
