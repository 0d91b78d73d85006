"""The follow-ups sets load, and every function they expect is in its namespace's example catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.quality_followups import KINDS, SETS, load_follow_ups
from benchmarks.quality_languages import CATALOG, FOLLOWUPS
from sync.files import read_file


@pytest.mark.parametrize("path", [*SETS, FOLLOWUPS], ids=lambda p: p.name)
def test_every_follow_up_expects_functions_of_its_catalog_after_an_earlier_turn(path: Path) -> None:
    follow_ups = load_follow_ups(path)
    catalogs = {
        n: {f.name for f in read_file(CATALOG / f"{n}.json").functions} for n in {f.namespace for f in follow_ups}
    }
    assert {f.kind for f in follow_ups} <= set(KINDS)
    for follow_up in follow_ups:
        assert len(follow_up.earlier) == 1, follow_up.question.id  # two turns: the tables say "the second"
        assert set(follow_up.question.expected) <= catalogs[follow_up.namespace], follow_up.question.id
    conversations = {(f.namespace, *f.earlier, f.question.text) for f in follow_ups}
    assert len(conversations) == len(follow_ups)  # no conversation twice
