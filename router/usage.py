"""Learning from usage: requests that led to a call become example queries of the called function.

When the messages of a run are stored, every tool call in them is paired with the request of
its turn (the user text since the previous non-user message, the same text routing embeds as
the new turn). That request, embedded, is kept as an *example* of the function, and routing
scores a function by its closest example as well as by its own text: the functions people
actually call for a kind of request rise for that kind of request (Tool2Vec's finding).

A turn that called several different functions ("book the flight, then email the invoice")
is split into clauses, and each function learns from the clause that routing matches best to
it rather than from the whole turn. Examples live in their own collection per embedding model
(they are queries, so the function text template does not matter to them), are deleted with
their function or when it changes, and never count as functions.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from router.embedding import Vectors
from router.retrieval import hybrid, message_text
from router.sparse import query_vector
from router.storage.base import Collection, CollectionSpec, PointData, Storage

if TYPE_CHECKING:
    from router.functions import ActiveIndex, FunctionStore
    from router.history import HistoryStore

__all__ = [
    "MAX_EXAMPLES",
    "Example",
    "ExampleStore",
    "called_functions",
    "clauses",
    "learn",
    "learn_from_run",
    "usage_examples",
]

MAX_EXAMPLES = 32
# Earlier messages read to find the request behind a call posted after it (one turn and then some).
CONTEXT_MESSAGES = 20
_IDS = uuid.UUID("5d2e8f61-7a3c-4b9e-a1d4-0c6b8e2f9a73")
_ABBREVIATIONS = r"(?<!\bMr\.)(?<!\bMrs\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bSt\.)(?<!\bvs\.)(?<!\be\.g\.)(?<!\bi\.e\.)"
_CONNECTIVE = r"(?:and\s+)?(?:also|then|after that|additionally|finally|next|lastly|furthermore|moreover)\b[,:]?"
_CLAUSE = re.compile(_ABBREVIATIONS + r"(?<=[.?!;])\s+(?=[A-Z\"'(])|\n+|,?\s+" + _CONNECTIVE + r"\s+", re.IGNORECASE)
_LEADING = re.compile(r"^" + _CONNECTIVE + r"\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Example:
    """A request that led to a call of ``name``."""

    name: str
    text: str


def called_functions(message: Mapping[str, Any]) -> list[str]:
    """The names of the functions a message calls.

    Reads OpenAI ``tool_calls`` (and the older ``function_call``), and ``tool_use`` content
    parts as Anthropic's API writes them.
    """
    names: list[str] = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            names.append(function["name"])
    legacy = message.get("function_call")
    if isinstance(legacy, Mapping) and isinstance(legacy.get("name"), str):
        names.append(legacy["name"])
    content = message.get("content")
    if isinstance(content, list):
        names += [
            part["name"]
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "tool_use" and isinstance(part.get("name"), str)
        ]
    return list(dict.fromkeys(names))


def usage_examples(messages: Sequence[Mapping[str, Any]], *, roles: Sequence[str], start: int = 0) -> list[Example]:
    """Pair each call made from ``messages[start:]`` with the request of its turn.

    Args:
        messages: a session's messages, oldest first (earlier ones give calls their context).
        roles: the roles whose text makes a request (routing's roles).
        start: where the messages not yet learned from begin.
    """
    request: list[str] = []
    in_request = False
    examples: list[Example] = []
    for position, message in enumerate(messages):
        if message.get("role") in roles:
            text = message_text(message)
            if not in_request:
                request = []
            if text:
                request.append(text)
            in_request = True
            continue
        in_request = False
        if position >= start and request:
            examples += [Example(name, "\n".join(request)) for name in called_functions(message)]
    return list(dict.fromkeys(examples))


def clauses(text: str) -> list[str]:
    """The clauses of a request that may ask for several things (sentences, "also ...", "then ...")."""
    parts = [_LEADING.sub("", part.strip(" \"'")) for part in _CLAUSE.split(text) if part and part.strip(" \"'")]
    kept = [part for part in parts if len(part.split()) >= 3]
    return kept or [text]


class ExampleStore:
    """Usage examples of every namespace, embedded by one model."""

    def __init__(self, collection: Collection) -> None:
        self.collection = collection

    @classmethod
    def open(cls, storage: Storage, *, model: str, dimension: int) -> ExampleStore:
        """Open (creating when missing) the examples collection of ``model``."""
        key = hashlib.sha256(f"{model}|{dimension}".encode()).hexdigest()[:12]
        spec = CollectionSpec(
            name=f"examples-{key}",
            dense_size=dimension,
            tenant_field="namespace",
            keyword_fields=("name",),
            integer_fields=("seq",),
        )
        return cls(storage.collection(spec))

    def add(self, namespace: str, examples: Sequence[tuple[Example, str]], vectors: Vectors) -> None:
        """Keep examples with their function's content hash; the same request is kept once.

        A function keeps its ``MAX_EXAMPLES`` most recent examples.
        """
        seq = time.time_ns() // 1_000
        points = [
            PointData(
                id=str(uuid.uuid5(_IDS, f"{namespace}\x00{example.name}\x00{example.text}")),
                payload={
                    "namespace": namespace,
                    "name": example.name,
                    "text": example.text,
                    "hash": content_hash,
                    "seq": seq + i,
                },
                dense=vectors[i].tolist(),
            )
            for i, (example, content_hash) in enumerate(examples)
        ]
        self.collection.upsert(points)
        for name in {example.name for example, _ in examples}:
            match = {"namespace": namespace, "name": name}
            extra = self.collection.count(match) - MAX_EXAMPLES
            if extra > 0:
                oldest = [r.id for r in self.collection.scroll(match, order_by="seq")][:extra]
                self.collection.delete(oldest)

    def nearest(self, namespace: str, vector: Sequence[float], *, limit: int) -> dict[str, tuple[float, str]]:
        """The functions with an example near ``vector``: ``{name: (best similarity, function hash)}``."""
        hits = self.collection.search(dense=vector, match={"namespace": namespace}, limit=limit * 2)
        best: dict[str, tuple[float, str]] = {}
        for hit in hits:
            name = hit.payload["name"]
            if name not in best:
                best[name] = (hit.score, hit.payload["hash"])
        return dict(list(best.items())[:limit])

    def texts(self, namespace: str, name: str) -> list[str]:
        """The example requests of one function, oldest first."""
        records = self.collection.scroll({"namespace": namespace, "name": name}, order_by="seq")
        return [r.payload["text"] for r in records]

    def count(self, namespace: str | None = None) -> int:
        """How many examples are kept (in one namespace, or in all)."""
        return self.collection.count({"namespace": namespace} if namespace else None)

    def forget(self, namespace: str, names: Sequence[str]) -> None:
        """Delete every example of the named functions."""
        self.collection.delete_where({"namespace": namespace, "name": list(names)})


async def learn(
    index: ActiveIndex,
    namespace: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    roles: Sequence[str],
    start: int = 0,
    lexical_weight: float = 0.25,
) -> int:
    """Keep the requests behind the calls made from ``messages[start:]`` as examples.

    Calls of functions that ``namespace`` does not hold are ignored.

    Args:
        index: the function index in use.
        namespace: the catalog the called functions belong to.
        messages: a session's messages, oldest first.
        roles: routing's roles (whose text makes a request).
        start: where the messages to learn from begin.
        lexical_weight: routing's lexical weight, to match the clauses of a request to functions as routing would.

    Returns:
        How many examples were kept.
    """
    store = index.store
    if store.examples is None:
        return 0
    found = usage_examples(messages, roles=roles, start=start)
    known = await asyncio.to_thread(store.existing, namespace, [e.name for e in found]) if found else {}
    found = [e for e in found if e.name in known]
    if not found:
        return 0
    by_request: dict[str, list[str]] = {}
    for example in found:
        by_request.setdefault(example.text, []).append(example.name)
    texts = list(by_request)
    parts = {text: clauses(text) if len(names) > 1 else [text] for text, names in by_request.items()}
    pieces = list(dict.fromkeys(p for text in texts for p in parts[text]))
    # A request is usually the turn just routed: through the query cache its vector costs no model call.
    vectors = await index.embedder.query(pieces)
    row = {piece: i for i, piece in enumerate(pieces)}
    kept: list[tuple[Example, str]] = []
    rows: list[int] = []
    for text, names in by_request.items():
        chosen = await asyncio.to_thread(_assign, store, namespace, names, parts[text], vectors, row, lexical_weight)
        for name, piece in chosen.items():
            kept.append((Example(name, piece), known[name]))
            rows.append(row[piece])
    await asyncio.to_thread(store.examples.add, namespace, kept, vectors[rows])
    return len(kept)


def _assign(
    store: FunctionStore,
    namespace: str,
    names: Sequence[str],
    parts: Sequence[str],
    vectors: Vectors,
    row: Mapping[str, int],
    lexical_weight: float,
) -> dict[str, str]:
    """Each called function's clause: the one routing would match best to it (the whole request when alone)."""
    if len(parts) == 1:
        return dict.fromkeys(names, parts[0])
    best: dict[str, tuple[float, str]] = {}
    for part in parts:
        found = store.named(namespace, vectors[row[part]].tolist(), query_vector(part), names)
        for scored in hybrid(found, lexical_weight=lexical_weight, example_weight=0.0):
            name = scored.function.name
            if name not in best or scored.score > best[name][0]:
                best[name] = (scored.score, part)
    return {name: best[name][1] if name in best else parts[0] for name in names}


async def learn_from_run(
    index: ActiveIndex,
    history: HistoryStore,
    session_id: str,
    stored: Sequence[Mapping[str, Any]],
    *,
    namespace: str,
    roles: Sequence[str],
    lexical_weight: float = 0.25,
) -> int:
    """Learn from the calls among a run's just-stored messages, with the session's earlier turns as context.

    Args:
        index: the function index in use.
        history: where the session's messages are.
        session_id: the session the run belongs to.
        stored: the run's messages as just stored (the last ones of the session).
        namespace: the catalog the called functions belong to.
        roles: routing's roles (whose text makes a request).
        lexical_weight: routing's lexical weight.
    """
    if not any(called_functions(m) for m in stored):
        return 0
    window = await asyncio.to_thread(history.messages, session_id, limit=len(stored) + CONTEXT_MESSAGES)
    start = max(0, len(window) - len(stored))
    return await learn(index, namespace, window, roles=roles, start=start, lexical_weight=lexical_weight)
