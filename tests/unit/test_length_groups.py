"""Grouping texts by token length before a model call."""

from __future__ import annotations

from router.embedding.batching import length_groups


def test_every_index_comes_once_shortest_first() -> None:
    lengths = [30, 5, 12, 5, 80, 29, 6]
    groups = length_groups(lengths, max_batch=32)
    flat = [i for g in groups for i in g]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths)


def test_a_group_pads_at_most_its_slack() -> None:
    lengths = [10, 10, 11, 12, 40, 41, 200]
    for group in length_groups(lengths, max_batch=32, slack=0.25):
        real = sum(lengths[i] for i in group)
        assert len(group) * max(lengths[i] for i in group) <= real * 1.25
    assert length_groups(lengths, max_batch=32, slack=0.25) == [[0, 1, 2, 3], [4, 5], [6]]


def test_groups_stop_at_the_batch_size() -> None:
    groups = length_groups([7] * 10, max_batch=4)
    assert [len(g) for g in groups] == [4, 4, 2]
    assert length_groups([], max_batch=4) == []
