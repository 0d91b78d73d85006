"""An evaluation: the router with its current settings and the peers, each ranking every case.

Everything embeds with one loaded model: the router's own embedder ranks for the dense peer
too, and a query the router embedded comes back from its cache for the peer.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from router.catalog.functions import CatalogDocument
from router.embedding import EmbedderPool, Progress
from router.evaluate import catalogs as sources
from router.evaluate.cases import Case, assign
from router.evaluate.metrics import DEPTH, Ranks
from router.evaluate.peers import Bm25Baseline, DenseBaseline, PerSentenceBaseline, bigtool_text
from router.evaluate.replay import StoredRun, build_cases, read_runs
from router.routing.routed import Turn
from router.routing.turns import TurnRouter
from router.server.backends import open_storage
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings
from sync.reconcile import ProgressFactory

# Where a note names the cases left out, the first few.
_LEFT_SHOWN = 3
ROUTER = "router"
COLD = "router, cold"
LEARNED = "router, replayed"
DENSE = "dense name: description"
BM25 = "BM25"
SENTENCES = "dense per sentence"


@dataclass(frozen=True)
class Options:
    """What to evaluate, from the command line.

    Attributes:
        cases: the cases of the cases file (JSONL); none with ``from_sessions``.
        problems: the file's bad lines, reported with the cases' own problems.
        from_sessions: the namespace whose stored sessions make the cases.
        catalog: a catalog directory or file.
        url: a running router whose catalogs are read over HTTP.
        namespace: the only catalog evaluated (and the cases' default).
        api_key: the key of the router at ``url``.
        in_place: route in the configured store (``--data``/``--qdrant-url``), not a throwaway one.
    """

    cases: list[Case] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    from_sessions: str | None = None
    catalog: Path | None = None
    url: str | None = None
    namespace: str | None = None
    api_key: str | None = None
    in_place: bool = False


@dataclass
class Evaluation:
    """Every method's ranks for every case.

    Attributes:
        cases: the cases, each with its namespace.
        methods: by label, the ranks each case got (in ``cases`` order).
        router: the label of the router row that gates and whose misses are listed.
        functions: the functions of the catalogs the cases route in.
        max_functions: how many functions a route returns by default (routing's setting).
        notes: what the reader should know (runs left out, functions no longer in the catalog).
    """

    cases: list[Case]
    methods: dict[str, list[Ranks]]
    router: str
    functions: int
    max_functions: int
    depth: int = DEPTH
    notes: list[str] = field(default_factory=list)


class _NoMemories:
    """Replayed runs teach usage only: memories never change which functions are routed."""

    def extract(self, text: str) -> list[str]:  # noqa: ARG002 - the protocol's signature
        return []


def _ranks(case: Case, names: Sequence[str], pinned: Sequence[str] = ()) -> Ranks:
    position = {name: i for i, name in enumerate(names, start=1)}
    return {name: 0 if name in pinned else position.get(name) for name in case.expected}


async def route(turns: TurnRouter, cases: Sequence[Case], progress: Progress | None = None) -> list[Ranks]:
    """The router's ranks for ``cases``, routed one after the other as turns without a session."""
    ranked: list[Ranks] = []
    for done, case in enumerate(cases, start=1):
        ranked.append(await route_one(turns, case))
        if progress is not None:
            progress(done, len(cases))
    return ranked


async def route_one(turns: TurnRouter, case: Case) -> Ranks:
    """One case routed with the router's settings, then ranked on down to ``DEPTH``.

    The first ``max_functions`` are exactly what a route answers. A route asking for more
    searches more candidates, which can order a large catalog a little differently, so the
    deeper route only places the functions after them.
    """
    assert case.namespace is not None  # noqa: S101 - cases are placed before routing
    answer = await turns.route(Turn(case.namespace, case.messages, max_functions=turns.settings.max_functions))
    deeper = await turns.route(Turn(case.namespace, case.messages, max_functions=DEPTH))
    names = [f.function.name for f in answer.functions]
    names += [name for name in (f.function.name for f in deeper.functions) if name not in names]
    return _ranks(case, names, [p.function.name for p in answer.pinned])


async def peers(
    runtime: Runtime, cases: Sequence[Case], catalogs: dict[str, CatalogDocument]
) -> dict[str, list[Ranks]]:
    """The dense, BM25 and per-sentence peers' ranks for ``cases``, each on its own catalog."""
    embedder = runtime.catalogs.index.embedder
    methods = (DENSE, BM25, SENTENCES)
    ranks: dict[str, list[Ranks | None]] = {method: [None] * len(cases) for method in methods}
    for namespace, document in catalogs.items():
        rows = [i for i, case in enumerate(cases) if case.namespace == namespace]
        if not rows:
            continue
        peer = await asyncio.to_thread(DenseBaseline, embedder, document.functions, bigtool_text)
        requests = [cases[i].request for i in rows]
        vectors = await embedder.query(requests)
        bm25 = Bm25Baseline(document.functions)
        split = await PerSentenceBaseline(peer, embedder).rank(requests, k=DEPTH)
        for i, dense, sentences in zip(rows, peer.rank(vectors, k=DEPTH), split, strict=True):
            ranks[DENSE][i] = _ranks(cases[i], dense)
            ranks[BM25][i] = _ranks(cases[i], bm25.rank(cases[i].request, k=DEPTH))
            ranks[SENTENCES][i] = _ranks(cases[i], sentences)
    return {method: [r for r in ranks[method] if r is not None] for method in methods}


@contextlib.asynccontextmanager
async def _runtime(
    settings: Settings, pool: EmbedderPool, storage: StorageSettings | None, progress: ProgressFactory | None
) -> AsyncIterator[Runtime]:
    """A runtime on ``storage``, or on a throwaway directory removed afterwards."""
    with contextlib.ExitStack() as stack:
        if storage is None:
            data = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="router-eval-")))
            # The throwaway store's own settings: a Qdrant server's set in the environment is not it.
            storage = StorageSettings.model_construct(data=data)
        own = Settings(embedding=settings.embedding, storage=storage, route=settings.route, limits=settings.limits)
        runtime = Runtime(own, embedders=pool, progress=progress, extractor=_NoMemories())
        await runtime.start()
        try:
            await runtime.service.rebuild()  # a store written with another model or text is brought up to date
            yield runtime
        finally:
            await runtime.stop()


async def evaluate_cases(
    settings: Settings,
    pool: EmbedderPool,
    options: Options,
    progress: ProgressFactory | None = None,
    steps: ProgressFactory | None = None,
) -> Evaluation:
    """The router and the peers on hand-written cases.

    ``progress`` shows large embeddings, ``steps`` the cases routed.
    """
    given = options.catalog is not None or options.url is not None
    storage = settings.storage if options.in_place else None
    if not given and storage is None:
        raise sources.CatalogUnavailable("no catalog: give --catalog, --url or --data")
    read = await sources.read(options.catalog, options.url, options.namespace, options.api_key) if given else {}
    # Cases are checked against catalogs read here before the model loads, so every mistake is said at once.
    placed = _place(options, read) if given else None
    async with _runtime(settings, pool, storage, progress) as runtime:
        if given:
            await sources.apply_all(runtime.service, read, source=sources.label(options.catalog, options.url))
        else:
            only = [options.namespace] if options.namespace else None
            read = await asyncio.to_thread(sources.from_store, runtime.storage, only)
        cases, notes = placed or _place(options, read)
        used = {c.namespace for c in cases}
        bar = steps("routing cases", len(cases)) if steps is not None else None
        methods = {ROUTER: await route(runtime.turns, cases, bar)}
        methods.update(await peers(runtime, cases, read))
    functions = sum(len(d.functions) for ns, d in read.items() if ns in used)
    return Evaluation(cases, methods, ROUTER, functions, settings.route.max_functions, notes=notes)


def _place(options: Options, read: dict[str, CatalogDocument]) -> tuple[list[Case], list[str]]:
    """The cases, each in its catalog, and a note on those of other catalogs left out."""
    names = {ns: {f.name for f in d.functions} for ns, d in read.items()}
    cases, left = assign(options.cases, names, namespace=options.namespace, errors=options.problems)
    if not left:
        return cases, []
    shown = ", ".join(case.where for case in left[:_LEFT_SHOWN]) + (", ..." if len(left) > _LEFT_SHOWN else "")
    return cases, [f"{len(left)} cases of other catalogs than {options.namespace!r} were left out ({shown})"]


async def evaluate_sessions(
    settings: Settings,
    pool: EmbedderPool,
    options: Options,
    progress: ProgressFactory | None = None,
    steps: ProgressFactory | None = None,
) -> Evaluation:
    """Cases from the stored runs of one namespace, routed cold and then replayed in the order stored.

    The store holding the sessions is only read. The replay runs in a throwaway store of the
    same catalog: each run's cases are routed, then the run is recorded, so every case is
    routed with only the runs before it learned.
    """
    namespace = options.from_sessions
    assert namespace is not None  # noqa: S101 - the command checks it
    location = settings.storage
    if location.embedded and not location.data_dir().is_dir():
        raise sources.CatalogUnavailable(f"data directory {location.data_dir()} does not exist")
    stored = await asyncio.to_thread(open_storage, location)
    try:
        runs = await asyncio.to_thread(read_runs, stored, namespace)
        if options.catalog is None and options.url is None:
            read = await asyncio.to_thread(sources.from_store, stored, [namespace])
    finally:
        await asyncio.to_thread(stored.close)
    if options.catalog is not None or options.url is not None:
        read = await sources.read(options.catalog, options.url, namespace, options.api_key)
    catalog = read[namespace]
    runs = build_cases(runs, {f.name for f in catalog.functions}, namespace=namespace, roles=settings.route.roles)
    cases = [case for run in runs for case in run.cases]
    if not cases:
        raise sources.CatalogUnavailable(
            f"no stored run of namespace {namespace!r} called a function of its catalog ({len(runs)} runs stored)"
        )
    async with _runtime(settings, pool, None, progress) as runtime:
        await sources.apply_all(runtime.service, read, source="eval")
        cold = await route(runtime.turns, cases, steps("routing cases cold", len(cases)) if steps else None)
        learned = await _replay(runtime.turns, runs, namespace, steps("replaying runs", len(runs)) if steps else None)
        methods = {COLD: cold, LEARNED: learned, **await peers(runtime, cases, read)}
    return Evaluation(cases, methods, LEARNED, len(catalog.functions), settings.route.max_functions, notes=_notes(runs))


async def _replay(
    turns: TurnRouter, runs: Sequence[StoredRun], namespace: str, progress: Progress | None
) -> list[Ranks]:
    ranked: list[Ranks] = []
    for done, run in enumerate(runs, start=1):
        for case in run.cases:
            ranked.append(await route_one(turns, case))
        if run.messages:
            await turns.record(run.session_id, run.messages, user_id=run.user_id, namespace=namespace)
        if progress is not None:
            progress(done, len(runs))
    return ranked


def _notes(runs: Sequence[StoredRun]) -> list[str]:
    used = sum(1 for run in runs if run.cases)
    called = f"{used} of {len(runs)} stored runs called functions of the catalog"
    notes = [f"{called}; each request behind their calls is a case"]
    unknown = sorted({name for run in runs for name in run.unknown})
    if unknown:
        notes.append(f"calls of functions no longer in the catalog were left out: {', '.join(unknown)}")
    return notes
