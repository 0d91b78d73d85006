"""Cases from real traffic: each stored run that called functions, in the order it was stored.

A *run* is what one ``POST /v1/sessions/{id}/messages`` stored (one session, one ``stored_at``).
Every call in it is paired with the user turn before it, as usage learning pairs them
(``router.retrieval.learning.usage_examples``): that turn is the case's request and the
functions called for it are expected. The model that made the calls decided what was needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from router.evaluate.cases import Case
from router.retrieval.learning import usage_examples
from router.sessions.history import MESSAGES, as_message
from router.storage.base import Storage


@dataclass
class StoredRun:
    """One run as stored, and the cases it makes.

    Attributes:
        session_id: the session it was stored in.
        user_id: the user it was stored for.
        stored_at: when (Unix time).
        messages: its messages without the store's own fields, ready to be recorded again.
        cases: one per request that led to calls of functions the catalog holds.
        unknown: functions it called that the catalog does not hold (left out of ``cases``).
    """

    session_id: str
    user_id: str | None
    stored_at: float
    messages: list[dict[str, Any]] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)
    unknown: set[str] = field(default_factory=set)


def read_runs(storage: Storage, namespace: str) -> list[StoredRun]:
    """The runs stored for ``namespace``, oldest first (read only: nothing is created or changed)."""
    if not storage.exists(MESSAGES.name):
        return []
    records = storage.collection(MESSAGES).scroll({"namespace": namespace}, order_by="seq")
    return group_runs(r.payload for r in records)


def group_runs(stored: Iterable[Mapping[str, Any]]) -> list[StoredRun]:
    """Stored messages (in ``seq`` order) grouped into their runs, in the order each run began."""
    runs: dict[tuple[str, float], StoredRun] = {}
    for record in stored:
        key = (str(record["session_id"]), float(record.get("stored_at", 0.0)))
        run = runs.get(key)
        if run is None:
            run = runs[key] = StoredRun(key[0], record.get("user_id"), key[1])
        run.messages.append(as_message(record))
    return list(runs.values())


def build_cases(
    runs: Sequence[StoredRun], functions: set[str], *, namespace: str, roles: Sequence[str] = ("user",)
) -> list[StoredRun]:
    """Fill each run's cases: its calls of ``functions`` paired with the user turn before each.

    A session's earlier runs give a call its request when the request was stored before the call.
    """
    seen: dict[str, list[dict[str, Any]]] = {}
    for number, run in enumerate(runs, start=1):
        earlier = seen.setdefault(run.session_id, [])
        start = len(earlier)
        earlier.extend(run.messages)
        by_request: dict[str, list[str]] = {}
        for example in usage_examples(earlier, roles=roles, start=start):
            if example.name in functions:
                by_request.setdefault(example.text, []).append(example.name)
            else:
                run.unknown.add(example.name)
        where = f"run {number} (session {run.session_id})"
        run.cases = [
            Case(where, ({"role": "user", "content": text},), text, tuple(dict.fromkeys(names)), namespace)
            for text, names in by_request.items()
        ]
    return list(runs)
