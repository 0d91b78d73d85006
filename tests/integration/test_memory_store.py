"""Which memories a store keeps current, on embedded storage with hand-made vectors.

Vectors are chosen, not embedded: these tests are about the rules of ``MemoryStore.add``
(retries, updates, time-bound statements, namespaces), not about a model's similarities.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

from router.sessions.memory import MemoryStore
from router.sessions.records import ANY_NAMESPACE
from router.sessions.reembed import reembed_memories
from router.storage.edge import EdgeStorage

pytestmark = pytest.mark.integration
SCOPE = "user:u"


def vectors(*angles: float) -> np.ndarray:
    """Unit vectors in a plane, one per angle (radians): close angles are near duplicates."""
    rows = np.zeros((len(angles), 8), dtype=np.float32)
    rows[:, 0], rows[:, 1] = np.cos(angles), np.sin(angles)
    return rows


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    storage = EdgeStorage(tmp_path / "data")
    try:
        yield MemoryStore.open(storage, model="hand-made", dimension=8)
    finally:
        storage.close()


def current(store: MemoryStore) -> list[str]:
    return [m.text for m in store.list(SCOPE)]


def test_a_retry_changes_nothing_and_a_later_restatement_is_current_again(store: MemoryStore) -> None:
    store.add(SCOPE, ANY_NAMESPACE, ["I live in Porto."], vectors(0.0), session_id="a")
    store.add(SCOPE, ANY_NAMESPACE, ["We moved to Lisbon last month."], vectors(1.0), session_id="b")
    again = store.add(SCOPE, ANY_NAMESPACE, ["I live in Porto."], vectors(0.0), session_id="a")
    assert (again.added, again.updated) == (0, 0)
    assert current(store) == ["We moved to Lisbon last month."]
    back = store.add(SCOPE, ANY_NAMESPACE, ["I live in Porto."], vectors(0.0), session_id="c")
    assert (back.added, back.updated) == (1, 1)
    assert current(store) == ["I live in Porto."]


def test_a_statement_said_again_in_its_session_after_what_replaced_it_is_current(store: MemoryStore) -> None:
    store.add(SCOPE, ANY_NAMESPACE, ["I live in Porto."], vectors(0.0), session_id="a")
    store.add(SCOPE, ANY_NAMESPACE, ["We moved to Lisbon."], vectors(1.0), session_id="a")
    back = store.add(SCOPE, ANY_NAMESPACE, ["I live in Porto."], vectors(0.0), session_id="a")  # "No, I still ..."
    assert (back.added, back.updated) == (1, 1)
    assert current(store) == ["I live in Porto."]


def test_a_post_retried_whole_changes_nothing(store: MemoryStore) -> None:
    texts = ["I live in Porto.", "We moved to Lisbon."]
    store.add(SCOPE, ANY_NAMESPACE, texts, vectors(0.0, 1.0), session_id="a")
    before = store.list(SCOPE, everything=True)
    retried = store.add(SCOPE, ANY_NAMESPACE, texts, vectors(0.0, 1.0), session_id="a")
    assert (retried.added, retried.updated) == (0, 0)
    assert store.list(SCOPE, everything=True) == before
    store.add(SCOPE, ANY_NAMESPACE, ["I live in Berlin."], vectors(2.0), session_id="b")
    late = store.add(SCOPE, ANY_NAMESPACE, texts, vectors(0.0, 1.0), session_id="a")  # retried after another session
    assert (late.added, late.updated) == (0, 0)
    assert current(store) == ["I live in Berlin."]


def test_a_statement_replaced_by_one_of_every_namespace_holds_again_said_again(store: MemoryStore) -> None:
    store.add(SCOPE, "travel", ["I live in Porto."], vectors(0.0), session_id="a")
    store.add(SCOPE, ANY_NAMESPACE, ["We moved to Lisbon."], vectors(1.0), session_id="a")
    store.add(SCOPE, "travel", ["I live in Porto."], vectors(0.0), session_id="a")
    assert recalled(store, "travel") == ["I live in Porto."]


def test_a_post_that_repeats_a_statement_and_replaces_it_retried_changes_nothing(store: MemoryStore) -> None:
    store.add(SCOPE, ANY_NAMESPACE, ["I live in Porto."], vectors(0.0), session_id="a")
    post = ["I live in Porto.", "We moved to Lisbon."]
    store.add(SCOPE, ANY_NAMESPACE, post, vectors(0.0, 1.0), session_id="a")
    before = store.list(SCOPE, everything=True)
    retried = store.add(SCOPE, ANY_NAMESPACE, post, vectors(0.0, 1.0), session_id="a")
    assert (retried.added, retried.updated, retried.expired) == (0, 0, 0)
    assert store.list(SCOPE, everything=True) == before
    # Said alone in a later post, it is said anew.
    assert store.add(SCOPE, ANY_NAMESPACE, ["I live in Porto."], vectors(0.0), session_id="a").added == 1
    assert current(store) == ["I live in Porto."]


def test_a_replaced_time_bound_statement_retried_changes_nothing(store: MemoryStore) -> None:
    month = [time.time() + 86_400]
    store.add(SCOPE, ANY_NAMESPACE, ["I'm vegetarian this month."], vectors(0.0), session_id="a", expires_at=month)
    store.add(SCOPE, ANY_NAMESPACE, ["I'm vegan."], vectors(1.0), session_id="b")
    assert current(store) == ["I'm vegan."]
    retried = store.add(
        SCOPE, ANY_NAMESPACE, ["I'm vegetarian this month."], vectors(0.0), session_id="a", expires_at=month
    )
    assert (retried.added, retried.updated, retried.expired) == (0, 0, 0)
    assert current(store) == ["I'm vegan."]


def test_a_statement_said_again_after_its_replacement_was_forgotten_holds_again(store: MemoryStore) -> None:
    store.add(SCOPE, ANY_NAMESPACE, ["I live in Porto."], vectors(0.0), session_id="a")
    store.add(SCOPE, ANY_NAMESPACE, ["We moved to Lisbon."], vectors(1.0), session_id="a")
    assert store.drop(SCOPE, ANY_NAMESPACE, ["that we moved to Lisbon"]) == 1
    store.add(SCOPE, ANY_NAMESPACE, ["I live in Porto."], vectors(0.0), session_id="a")
    assert current(store) == ["I live in Porto."]


def test_a_time_bound_statement_said_again_after_it_ended_holds_again(store: MemoryStore) -> None:
    store.add(SCOPE, "ops", ["I'm on call this week."], vectors(0.0), session_id="a", expires_at=[time.time() + 0.2])
    time.sleep(0.3)
    store.add(SCOPE, "ops", ["I like jazz."], vectors(2.0), session_id="a")  # marks it expired
    until = time.time() + 86_400
    store.add(SCOPE, "ops", ["I'm on call this week."], vectors(0.0), session_id="a", expires_at=[until])
    assert current(store) == ["I like jazz.", "I'm on call this week."]


def test_a_time_bound_statement_replaces_nothing_lasting(store: MemoryStore) -> None:
    store.add(SCOPE, ANY_NAMESPACE, ["I live in Porto."], vectors(0.0), session_id="a")
    until = time.time() + 86_400
    changes = store.add(
        SCOPE, ANY_NAMESPACE, ["I'm living in Berlin for the next two months."], vectors(1.0), session_id="b",
        expires_at=[until],
    )  # fmt: skip
    assert changes.updated == 0
    assert current(store) == ["I live in Porto.", "I'm living in Berlin for the next two months."]


def test_of_two_updates_in_one_run_the_later_is_current(store: MemoryStore) -> None:
    texts = ["I live in Porto.", "We moved to Lisbon."]
    changes = store.add(SCOPE, ANY_NAMESPACE, texts, vectors(0.0, 1.0), session_id="a")
    assert (changes.added, changes.updated) == (2, 1)
    assert current(store) == ["We moved to Lisbon."]


def test_a_statement_in_one_namespace_replaces_none_of_another(store: MemoryStore) -> None:
    store.add(SCOPE, "devops", ["I live in Porto."], vectors(0.0), session_id="a")
    store.add(SCOPE, "travel", ["We moved to Lisbon."], vectors(1.0), session_id="b")
    assert current(store) == ["I live in Porto.", "We moved to Lisbon."]


def recalled(store: MemoryStore, namespace: str) -> list[str]:
    return store.rows(SCOPE, [namespace]).texts


def test_a_memory_of_every_namespace_replaced_in_one_stays_in_the_others(store: MemoryStore) -> None:
    store.add(SCOPE, ANY_NAMESPACE, ["I live in Porto."], vectors(0.0), session_id="a")
    assert store.add(SCOPE, "travel", ["We moved to Lisbon."], vectors(1.0), session_id="b").updated == 1
    # Both came back in travel; another tenant's namespace keeps what it was told.
    assert recalled(store, "travel") == ["We moved to Lisbon."]
    assert recalled(store, "devops") == ["I live in Porto."]
    [porto] = [m for m in store.list(SCOPE) if m.namespace == ANY_NAMESPACE]
    assert (porto.replaced_in, porto.superseded_by) == (("travel",), None)
    # Said again in travel, it holds there again, as a memory of travel.
    store.add(SCOPE, "travel", ["I live in Porto."], vectors(0.0), session_id="c")
    assert recalled(store, "travel") == ["I live in Porto."]
    # A memory said without a namespace replaces those of every namespace.
    store.add(SCOPE, "devops", ["My manager is Sarah."], vectors(2.0), session_id="d")
    assert store.add(SCOPE, ANY_NAMESPACE, ["My manager is Tom."], vectors(3.0), session_id="e").updated == 1
    assert "My manager is Sarah." not in recalled(store, "devops")


def test_said_again_for_every_namespace_a_memory_holds_again_where_it_was_replaced(store: MemoryStore) -> None:
    store.add(SCOPE, ANY_NAMESPACE, ["I live in Porto."], vectors(0.0), session_id="a")
    store.add(SCOPE, "travel", ["We moved to Lisbon."], vectors(1.0), session_id="b")
    assert store.add(SCOPE, ANY_NAMESPACE, ["I live in Porto."], vectors(0.0), session_id="c").added == 1
    assert recalled(store, "travel") == ["I live in Porto."]


def test_a_memory_of_every_namespace_posted_again_by_its_session_after_a_replace_elsewhere_changes_nothing(
    store: MemoryStore,
) -> None:
    # A client that sends the whole conversation again posts session a's old statement on its next turn.
    store.add(SCOPE, ANY_NAMESPACE, ["I live in Porto."], vectors(0.0), session_id="a")
    store.add(SCOPE, "travel", ["We moved to Lisbon."], vectors(1.0), session_id="b")
    again = store.add(SCOPE, ANY_NAMESPACE, ["I live in Porto."], vectors(0.0), session_id="a")
    assert (again.added, again.updated) == (0, 0)
    assert recalled(store, "travel") == ["We moved to Lisbon."]


def test_a_statement_said_twice_in_one_run_is_one_memory_as_said_last(store: MemoryStore) -> None:
    said = store.add(SCOPE, ANY_NAMESPACE, ["I live in Porto.", "i live in  porto."], vectors(0.0, 0.0), session_id="a")
    assert said.added == 1
    assert current(store) == ["i live in  porto."]
    texts = ["I live in Porto.", "We moved to Lisbon.", "i live in porto."]
    store.add(SCOPE, "travel", texts, vectors(0.0, 1.0, 0.0), session_id="b")
    assert recalled(store, "travel") == ["i live in porto."]


def test_a_memory_said_in_a_namespace_and_for_every_one_comes_back_once(store: MemoryStore) -> None:
    store.add(SCOPE, "travel", ["I'm vegan."], vectors(0.0), session_id="a")
    store.add(SCOPE, ANY_NAMESPACE, ["I'm vegan."], vectors(0.0), session_id="b")
    assert recalled(store, "travel") == ["I'm vegan."]


def test_runs_of_two_namespaces_at_once_both_replace_a_shared_memory(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both read the memory before either wrote: the later write kept its namespace only.
    store.add(SCOPE, ANY_NAMESPACE, ["I live in Porto."], vectors(0.0), session_id="a")
    collection = store._collection
    scroll = collection.scroll

    def slow(*args: Any, **kwargs: Any) -> Any:
        found = list(scroll(*args, **kwargs))
        time.sleep(0.3)
        return iter(found)

    monkeypatch.setattr(collection, "scroll", slow)
    runs = [
        threading.Thread(target=store.add, args=(SCOPE, ns, [text], vectors(angle)), kwargs={"session_id": ns})
        for ns, text, angle in (("travel", "We moved to Lisbon.", 1.0), ("shop", "We moved to Berlin.", 2.0))
    ]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    monkeypatch.undo()
    [porto] = [m for m in store.list(SCOPE) if m.text == "I live in Porto."]
    assert sorted(porto.replaced_in) == ["shop", "travel"]


def test_a_memory_of_one_namespace_is_no_duplicate_of_one_for_every_namespace(store: MemoryStore) -> None:
    store.add(SCOPE, "travel", ["I prefer aisle seats."], vectors(0.0), session_id="a")
    assert store.add(SCOPE, ANY_NAMESPACE, ["I prefer aisle seats!"], vectors(0.0), session_id="b").added == 1
    assert store.add(SCOPE, "devops", ["I prefer aisle seats."], vectors(0.0), session_id="c").added == 0
    assert recalled(store, "devops") == ["I prefer aisle seats!"]


def test_a_statement_in_one_namespace_expires_none_of_another(store: MemoryStore) -> None:
    ended = [time.time() - 1]
    store.add(SCOPE, "travel", ["I am in Rome today."], vectors(0.0), session_id="a", expires_at=ended)
    store.add(SCOPE, "devops", ["I am on call today."], vectors(1.0), session_id="b", expires_at=ended)
    # Another tenant's memories of the same user are neither counted nor written here.
    assert store.add(SCOPE, "devops", ["I prefer dark mode."], vectors(2.0), session_id="c").expired == 1
    assert store.add(SCOPE, "travel", ["I prefer aisle seats."], vectors(3.0), session_id="d").expired == 1


def test_an_update_close_in_meaning_is_not_taken_for_a_duplicate(store: MemoryStore) -> None:
    store.add(SCOPE, ANY_NAMESPACE, ["My hotel budget is 150 euros."], vectors(0.0), session_id="a")
    changes = store.add(SCOPE, ANY_NAMESPACE, ["My hotel budget is 120 euros."], vectors(0.01), session_id="b")
    assert (changes.added, changes.updated) == (1, 1)
    assert current(store) == ["My hotel budget is 120 euros."]
    same = store.add(SCOPE, ANY_NAMESPACE, ["My hotel budget is 120 euros!"], vectors(0.01), session_id="c")
    assert same.added == 0, "the same value said again is a duplicate"


class HandModel:
    """A second "model" for a model change: the same hand-made vectors under another name."""

    model_name = "hand-made-2"
    dimension = 8

    async def embed(self, texts: list[str], *, kind: str) -> np.ndarray:
        assert kind == "memory"
        return vectors(*[float(i) for i in range(len(texts))])


async def test_a_model_change_carries_what_happened_while_it_copied(tmp_path: Path) -> None:
    storage = EdgeStorage(tmp_path / "data")
    try:
        old = MemoryStore.open(storage, model="hand-made", dimension=8)
        old.add(SCOPE, ANY_NAMESPACE, ["I live in Porto."], vectors(0.0), session_id="a")
        target = cast(Any, HandModel())
        assert await reembed_memories(storage, source=("hand-made", 8), target=target) == 1
        # Said while the first pass ran: the second pass (just before the switch) must carry it.
        old.add(SCOPE, ANY_NAMESPACE, ["We moved to Lisbon."], vectors(1.0), session_id="b")
        assert await reembed_memories(storage, source=("hand-made", 8), target=target) == 1
        new = MemoryStore.open(storage, model="hand-made-2", dimension=8)
        assert [m.text for m in new.list(SCOPE)] == ["We moved to Lisbon."]
        assert {m.text: m.superseded_by is not None for m in new.list(SCOPE, everything=True)} == {
            "I live in Porto.": True,
            "We moved to Lisbon.": False,
        }
        # Where a memory for every namespace no longer holds is carried too.
        old.add(SCOPE, ANY_NAMESPACE, ["My manager is Sarah."], vectors(2.0), session_id="c")
        await reembed_memories(storage, source=("hand-made", 8), target=target)
        old.add(SCOPE, "travel", ["My manager is Tom."], vectors(3.0), session_id="d")
        await reembed_memories(storage, source=("hand-made", 8), target=target)
        assert {m.text: m.replaced_in for m in new.list(SCOPE)}["My manager is Sarah."] == ("travel",)
    finally:
        storage.close()


def test_a_route_reads_the_newest_memories_of_a_user_who_holds_more(store: MemoryStore) -> None:
    # Storage lists memories in id order (a hash of the text), not in time: bounding that listing
    # left the newest memory out of every route once the user held more than the bound.
    texts = [f"I collect item number {i}." for i in range(40)]
    rows = np.random.default_rng(0).normal(size=(40, 8)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    assert (rows @ rows.T - np.eye(40)).max() < 0.95  # no two are the same memory
    for i, text in enumerate(texts):
        store.add(SCOPE, ANY_NAMESPACE, [text], rows[i : i + 1], session_id=f"s{i}")
    read = store.rows(SCOPE, ["travel"], limit=4)
    assert sorted(read.texts) == sorted(texts[-4:])
    assert read.vectors.shape == (4, 8)


def test_a_statement_denied_later_is_replaced_even_when_the_two_read_alike(store: MemoryStore) -> None:
    # Embedded, a statement and its denial are near duplicates: the denial must still be kept.
    store.add(SCOPE, ANY_NAMESPACE, ["I'm allergic to peanuts."], vectors(0.0), session_id="a")
    denied = store.add(SCOPE, ANY_NAMESPACE, ["I'm not allergic to peanuts anymore."], vectors(0.05), session_id="b")
    assert (denied.added, denied.updated) == (1, 1)
    assert current(store) == ["I'm not allergic to peanuts anymore."]
    store.add(SCOPE, ANY_NAMESPACE, ["I don't like cats."], vectors(1.0), session_id="c")
    store.add(SCOPE, ANY_NAMESPACE, ["I like cats."], vectors(1.02), session_id="d")
    assert current(store) == ["I'm not allergic to peanuts anymore.", "I like cats."]


def test_a_forget_in_a_namespace_deletes_its_own_memories_only(store: MemoryStore) -> None:
    store.add(SCOPE, ANY_NAMESPACE, ["I live in Porto."], vectors(0.0), session_id="a")
    store.add(SCOPE, "travel", ["I am vegan."], vectors(1.0), session_id="a")
    store.add(SCOPE, "devops", ["I am vegan!"], vectors(2.0), session_id="a")
    # Memories for every namespace, and another namespace's, are not this tenant's to delete: the one
    # for every namespace no longer comes back in this one.
    assert store.drop(SCOPE, "travel", ["I live in Porto", "that I'm vegan"]) == 2
    assert current(store) == ["I live in Porto.", "I am vegan!"]
    assert recalled(store, "travel") == []
    assert recalled(store, "devops") == ["I live in Porto.", "I am vegan!"]
    assert store.drop(SCOPE, "travel", ["I live in Porto"]) == 0, "forgotten there already"
    assert store.drop(SCOPE, ANY_NAMESPACE, ["I live in Porto", "that I'm vegan"]) == 2
    assert current(store) == []
