"""Learning from usage: requests that led to a call become example queries of the called function.

When the messages of a run are stored, every tool call in them is paired with the request of
its turn (the user text since the previous non-user message, the same text routing embeds as
the new turn). That request, embedded, is kept as an *example* of the function, and routing
scores a function by its closest example as well as by its own text: the functions people
actually call for a kind of request rise for that kind of request (Tool2Vec's finding).

A turn that called several different functions ("book the flight, then email the invoice")
is split into clauses, and each function learns from the clause that routing matches best to
it rather than from the whole turn. ``router.retrieval.examples`` keeps them.

With a multilingual space, a request becomes an example in the space it is routed in
(``learn_in_spaces``): an English one in the default space, another in the multilingual one.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from router.common.english import ACTION_VERBS
from router.embedding import Vectors
from router.embedding.language import ENGLISH
from router.retrieval.candidates import named
from router.retrieval.catalogs import ActiveIndex, Catalogs
from router.retrieval.examples import Example
from router.retrieval.fusion import hybrid
from router.retrieval.index import FunctionStore
from router.retrieval.parts import parts as clauses
from router.retrieval.runs import RunCall, calls, run_calls
from router.retrieval.sparse import query_vector

log = logging.getLogger(__name__)
# Where learning cuts a part into steps (``_steps``).
_AND_ACTION = re.compile(rf"(?<![\s,]),?\s++and\s++(?=(?:{ACTION_VERBS})\b)", re.IGNORECASE)
# Earlier messages read to find the request behind a call posted after it (one turn and then some).
CONTEXT_MESSAGES = 20


def called_functions(message: Mapping[str, Any]) -> list[str]:
    """The names of the functions a message calls, each once (the shapes ``router.retrieval.runs`` reads)."""
    return list(dict.fromkeys(name for name, _, _ in calls(message)))


def usage_examples(messages: Sequence[Mapping[str, Any]], *, roles: Sequence[str], start: int = 0) -> list[Example]:
    """Pair each call made from ``messages[start:]`` with the request of its turn.

    Args:
        messages: a session's messages, oldest first (earlier ones give calls their context).
        roles: the roles whose text makes a request (routing's roles).
        start: where the messages not yet learned from begin.
    """
    found = call_requests(messages, roles=roles, start=start)
    return list(dict.fromkeys(Example(name, text) for _, name, text in found))


def call_requests(
    messages: Sequence[Mapping[str, Any]], *, roles: Sequence[str], start: int = 0
) -> list[tuple[int, str, str]]:
    """Each call made from ``messages[start:]`` as (position of its message, function, request of its turn).

    Calls made before any request (nothing to pair them with) are left out; a function a
    message calls twice is listed once.
    """
    found = {(c.position, c.name): c.request for c in run_calls(messages, roles=roles) if c.position >= start}
    return [(position, name, request) for (position, name), request in found.items()]


async def learn(
    index: ActiveIndex,
    namespace: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    roles: Sequence[str],
    lexical_weight: float,
    start: int = 0,
    session: str = "",
    requests: Callable[[str], bool] | None = None,
    language: Callable[[str], str] | None = None,
) -> int:
    """Keep the requests behind the calls whose results arrived in ``messages[start:]`` as examples.

    A call teaches once its result is seen, and only when the result is not an error
    (``router.retrieval.runs``): a call still waiting for its result teaches nothing yet. A call
    that did not succeed still claims its part of the request when no later message of its turn
    called again, so that the part of a step that failed is not taught to the function of
    another; one the model followed with another call was a try the later call corrects.
    Within one turn, a call of a later message replaces the calls of earlier messages that
    served the same part of the request (the model corrected itself): the earlier ones'
    examples of that request are deleted if they were already kept. A later call that used an
    earlier one's result continues it instead, and both teach. Calls of functions that
    ``namespace`` does not hold are ignored.

    Args:
        index: the function index in use.
        namespace: the catalog the called functions belong to.
        messages: a session's messages, oldest first.
        roles: routing's roles (whose text makes a request).
        start: where the messages to learn from begin.
        lexical_weight: routing's lexical weight, to match the clauses of a request to functions as routing would.
        session: the session the messages belong to: each of its turns is kept once as a run of
            companions (``router.retrieval.companions``), with the functions it taught, in order.
        requests: which requests to learn from (all when None).
        language: a request's language, which its split into parts reads (English when None).

    Returns:
        How many examples were kept.
    """
    store = index.store
    made = run_calls(messages, roles=roles)
    turns = {c.turn for c in made if c.answered >= start and c.outcome == "succeeded"}
    # A step that failed still claims its part of the request, unless a later message of its turn tried again.
    last = {c.turn: c.position for c in made}
    tried = [
        c
        for c in made
        if c.turn in turns
        and (c.outcome == "succeeded" or c.position == last[c.turn])
        and (requests is None or requests(c.request))
    ]
    known = await asyncio.to_thread(store.existing, namespace, [c.name for c in tried]) if tried else {}
    tried = [c for c in tried if c.name in known]
    if not any(c.outcome == "succeeded" for c in tried):
        return 0
    by_turn: dict[int, list[RunCall]] = {}
    for call in tried:
        by_turn.setdefault(call.turn, []).append(call)
    parts = {turn: _parts(found, language) for turn, found in by_turn.items()}
    pieces = list(dict.fromkeys(p for found in parts.values() for p in found))
    # A request is usually the turn just routed: through the query cache its vector costs no model call.
    vectors = await index.embedder.query(pieces)
    row = {piece: i for i, piece in enumerate(pieces)}
    kept: list[tuple[Example, str]] = []
    rows: list[int] = []
    joined: list[tuple[Example, str]] = []
    joined_rows: list[int] = []
    dropped: list[Example] = []
    for turn, calls_made in by_turn.items():
        names = list(dict.fromkeys(c.name for c in calls_made))
        chosen = await asyncio.to_thread(_assign, store, namespace, names, parts[turn], vectors, row, lexical_weight)
        found = [c for c in calls_made if c.outcome == "succeeded"]
        if not found:
            continue
        teach, superseded, standing = await asyncio.to_thread(corrected, found, chosen, start=start)
        whole = found[0].request
        # Only a kept example narrows to its part: one deleted since the post that taught it stays deleted.
        narrowed = [Example(n, whole) for n in superseded if n in standing]
        held = await asyncio.to_thread(store.examples.held, namespace, narrowed) if narrowed else set()
        gone = {e.name for e in narrowed if e not in held}
        run = f"{session}\x00{messages[turn].get('seq', turn)}"
        await asyncio.to_thread(store.companions.observe, namespace, run, [c.name for c in found])
        for name in standing:
            beside = tuple(n for n in standing if n != name)
            # One that taught in an earlier post learns what its run called beside it since.
            taught = name in teach and name not in gone
            (kept if taught else joined).append((Example(name, chosen[name], beside), known[name]))
            (rows if taught else joined_rows).append(row[chosen[name]])
        dropped += [Example(n, text) for n in superseded if n not in standing for text in {chosen[n], whole}]
        dropped += [e for e in narrowed if e in held]
    if dropped:
        await asyncio.to_thread(store.examples.remove, namespace, dropped)
    if joined:
        await asyncio.to_thread(store.examples.join, namespace, joined, vectors[joined_rows])
    if not kept:
        return 0
    await asyncio.to_thread(store.examples.add, namespace, kept, vectors[rows])
    return len(kept)


def _parts(found: Sequence[RunCall], language: Callable[[str], str] | None) -> list[str]:
    """The parts of a turn's request its calls are matched to (the whole request when it called one function).

    Learning cuts finer than routing: an English part is also cut before "and" and an action
    ("Find a hotel in Madrid and reserve the cheapest room"), since the several functions
    called say that the "and" joined steps, not objects.
    """
    text = found[0].request
    if len({c.name for c in found}) == 1:
        return [text]
    spoken = ENGLISH if language is None else language(text)
    found_parts = clauses(text, spoken)
    if spoken != ENGLISH:
        return found_parts
    return [step for part in found_parts for step in _steps(part)]


def _steps(part: str) -> list[str]:
    """A part cut before each "and" with an action that follows two words or more ("Search and book" stays)."""
    steps: list[str] = []
    start = 0
    for cut in _AND_ACTION.finditer(part):
        if len(part[start : cut.start()].split()) >= 2:
            steps.append(part[start : cut.start()])
            start = cut.end()
    return [*steps, part[start:]]


def corrected(
    found: Sequence[RunCall], chosen: Mapping[str, str], *, start: int
) -> tuple[list[str], list[str], list[str]]:
    """Which of a turn's succeeded calls teach, which were superseded after they had taught, and which stand.

    Each part of the request (``chosen`` maps each function to its part) is taught by the
    functions of the latest message that called one for it: calls made together serve
    several parts, a later call for the same part replaces an earlier one, unless a standing
    call of another function used the earlier one's result (``RunCall.uses``: search, then book
    what the search found). Those functions stand for the turn, whenever their results came. A
    function teaches when one of its calls was answered from ``start`` on; a superseded one that
    was answered before ``start`` had taught, and is returned to be forgotten. So is one that
    taught the whole request before a later call narrowed its part, and it teaches that part.
    """
    latest: dict[str, int] = {}
    fresh: set[str] = set()
    for call in found:
        latest[call.name] = max(latest.get(call.name, -1), call.position)
        if call.answered >= start:
            fresh.add(call.name)
    last_of_part: dict[str, int] = {}
    for name, position in latest.items():
        last_of_part[chosen[name]] = max(last_of_part.get(chosen[name], -1), position)
    replaced = {n for n, p in latest.items() if p < last_of_part[chosen[n]]}
    # A replaced function stands after all when a standing call of another function used its result.
    while freed := {e.name for e in found if e.name in replaced and _continued(e, found, replaced)}:
        replaced -= freed
    standing = [n for n in latest if n not in replaced]
    # Taught the whole request in an earlier post, before a later call narrowed its part: it teaches that part.
    narrowed = [n for n in standing if n not in fresh and chosen[n] != found[0].request]
    superseded = [n for n in latest if n in replaced and n not in fresh]
    return [n for n in standing if n in fresh] + narrowed, superseded + narrowed, standing


def _continued(earlier: RunCall, found: Sequence[RunCall], replaced: set[str]) -> bool:
    """Whether a later call of a function not replaced used ``earlier``'s result."""
    return any(c.name not in replaced and c.position > earlier.position and c.uses(earlier) for c in found)


async def learn_in_spaces(
    catalogs: Catalogs,
    namespace: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    roles: Sequence[str],
    lexical_weight: float,
    start: int = 0,
    session: str = "",
) -> int:
    """``learn`` in the space each request is routed in (``Catalogs.space``); how many examples were kept.

    A failure of the multilingual space loses its examples of this run only (logged).
    """
    options: dict[str, Any] = {"roles": roles, "start": start, "lexical_weight": lexical_weight, "session": session}
    options["language"] = catalogs.language  # the split routing reads (``Catalogs.language``)
    second = catalogs.multilingual
    if second is None:
        return await learn(catalogs.index, namespace, messages, **options)
    english = catalogs.languages.english
    kept = await learn(catalogs.index, namespace, messages, requests=english, **options)
    try:
        options["lexical_weight"] = second.lexical(lexical_weight)
        kept += await learn(second, namespace, messages, requests=lambda text: not english(text), **options)
    except Exception as exc:
        log.warning("usage examples of non-English requests not kept", extra={"detail": str(exc)})
    return kept


def _assign(
    store: FunctionStore,
    namespace: str,
    names: Sequence[str],
    parts: Sequence[str],
    vectors: Vectors,
    row: Mapping[str, int],
    lexical_weight: float,
) -> dict[str, str]:
    """Each called function's clause: matched as routing would, one function per clause while clauses remain.

    The best-matching (function, clause) pairs are taken first, each clause once, so that a
    vague clause ("then book the cheapest one") still gets the function no other clause
    claims; functions beyond the clauses take their best one (the whole request when alone).
    """
    if len(parts) == 1:
        return dict.fromkeys(names, parts[0])
    pairs: list[tuple[float, str, str]] = []
    frequencies = store.frequencies(namespace)
    for part in parts:
        found = named(store, namespace, vectors[row[part]].tolist(), query_vector(part, frequencies), names)
        pairs += [(s.score, s.name, part) for s in hybrid(found, lexical_weight=lexical_weight, example_weight=0.0)]
    pairs.sort(key=lambda p: -p[0])
    chosen: dict[str, str] = {}
    for _, name, part in pairs:
        if name not in chosen and part not in chosen.values():
            chosen[name] = part
    for _, name, part in pairs:
        chosen.setdefault(name, part)
    return {name: chosen.get(name, parts[0]) for name in names}
