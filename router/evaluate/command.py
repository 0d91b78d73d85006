"""``router eval``: measure the router on a catalog and its cases, against the peers; gate on a floor."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from typing import TYPE_CHECKING

from router.common import arguments
from router.evaluate.metrics import DEPTH
from router.retrieval.texts import TEMPLATES
from router.server import logs
from router.server.settings import Settings

if TYPE_CHECKING:
    from router.evaluate.run import Evaluation, Options
    from sync.reconcile import ProgressFactory

USAGE = 2
BELOW_FLOOR = 1


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``eval`` to the commands."""
    command = commands.add_parser(
        "eval",
        help="measure routing on your catalog and cases against dense, BM25 and per-sentence peers",
        description="Route every case with the current settings (embedded, no server needed) and print "
        "R@k, all@k and MRR beside dense name: description, BM25 and dense per sentence (interleaved) "
        "on the same catalog.",
    )
    cases = command.add_mutually_exclusive_group(required=True)
    cases.add_argument(
        "--cases", type=arguments.path, help='JSONL: {"request" or "messages", "expected": [names]} per line'
    )
    cases.add_argument(
        "--from-sessions", metavar="NAMESPACE", help="cases from the runs stored in this namespace, replayed in order"
    )
    catalog = command.add_mutually_exclusive_group()
    catalog.add_argument(
        "--catalog", type=arguments.path, help="catalog directory (one file per namespace) or one catalog file"
    )
    catalog.add_argument(
        "--url", type=arguments.text, help="a running router whose catalogs are evaluated (read over its HTTP API)"
    )
    command.add_argument(
        "--namespace", type=arguments.text, help="evaluate this catalog only (and route cases that name none in it)"
    )
    command.add_argument(
        "--api-key", type=arguments.text, metavar="KEY", help="API key of the router at --url (default: ROUTER_API_KEY)"
    )
    where = command.add_mutually_exclusive_group()
    where.add_argument(
        "--data", type=arguments.path, help="embedded data directory: evaluated in place, or read for --from-sessions"
    )
    where.add_argument(
        "--qdrant-url", type=arguments.text, help="Qdrant server: evaluated in place, or read for --from-sessions"
    )
    command.add_argument("--model", type=arguments.text, help="sentence-transformers model name or path")
    command.add_argument("--text", choices=sorted(TEMPLATES), help="function text template (as for serve)")
    command.add_argument("--json", action="store_true", help="print the report as JSON")
    command.add_argument(
        "--min-recall", type=float, metavar="X", help="exit 1 when the router's R@K is below X (0 to 1)"
    )
    command.add_argument("--k", type=int, metavar="K", help="the K of --min-recall and of the misses listed")
    logs.add_flags(command)


def _options(args: argparse.Namespace, settings: Settings) -> Options:
    from router.evaluate.cases import read_cases
    from router.evaluate.run import Options

    in_place = args.data is not None or args.qdrant_url is not None
    cases, problems = read_cases(args.cases, roles=settings.route.roles) if args.from_sessions is None else ([], [])
    api_key = (args.api_key or os.environ.get("ROUTER_API_KEY") or None) if args.url else None
    return Options(cases, problems, args.from_sessions, args.catalog, args.url, args.namespace, api_key, in_place)


def _problem(args: argparse.Namespace) -> str | None:
    if args.min_recall is not None and not 0 <= args.min_recall <= 1:
        return f"--min-recall {args.min_recall} must be between 0 and 1"
    if args.k is not None and not 1 <= args.k <= DEPTH:
        return f"--k {args.k} must be from 1 to {DEPTH}: ranks are read to depth {DEPTH}"
    if args.api_key and not args.url:
        return "--api-key is the key of a running router: give its --url"
    if args.from_sessions is not None and args.namespace not in (None, args.from_sessions):
        return "--namespace differs from --from-sessions: the sessions' namespace is the catalog evaluated"
    return None


def _terminated(signum: int, _frame: object) -> None:
    # Unwound as Ctrl-C is, so the throwaway store is removed on the way out (CI cancels a job with SIGTERM).
    raise SystemExit(128 + signum)


def run(
    args: argparse.Namespace,
    settings: Settings,
    *,
    progress: ProgressFactory | None = None,
    steps: ProgressFactory | None = None,
) -> int:
    """Run ``router eval``: 0, 1 below the ``--min-recall`` floor, 2 on bad cases or catalogs.

    Args:
        args: the parsed command line.
        settings: settings from the environment and flags (routing's as configured).
        progress: shows large embeddings.
        steps: shows the cases routed.
    """
    # The model and storage are imported only when a command needs them: `router --help` stays quick.
    from router.evaluate.cases import CasesInvalid
    from router.evaluate.catalogs import CatalogUnavailable
    from router.evaluate.run import evaluate_cases, evaluate_sessions
    from router.server.backends import embedder_pool

    problem = _problem(args)
    if problem is not None:
        print(f"router eval: {problem}", file=sys.stderr)
        return USAGE
    pool = embedder_pool(settings.embedding)
    try:
        options = _options(args, settings)
        evaluate = evaluate_sessions if options.from_sessions is not None else evaluate_cases
        previous = signal.signal(signal.SIGTERM, _terminated)
        try:
            evaluation = asyncio.run(evaluate(settings, pool, options, progress, steps))
        finally:
            signal.signal(signal.SIGTERM, previous)
    except (CasesInvalid, CatalogUnavailable) as exc:
        print(f"router eval: {exc}", file=sys.stderr)
        return USAGE
    finally:
        pool.close()
    return _report(evaluation, args)


def _report(evaluation: Evaluation, args: argparse.Namespace) -> int:
    from router.evaluate.report import Gate, as_json, table

    k = args.k or evaluation.max_functions
    gate = Gate(args.min_recall, k) if args.min_recall is not None else None
    if args.json:
        print(json.dumps(as_json(evaluation, k=k, gate=gate), indent=2))
    else:
        print(table(evaluation, k=k, gate=gate))
    if gate is not None and not gate.passed(evaluation):
        print(f"router eval: {gate.verdict(evaluation)}", file=sys.stderr)
        return BELOW_FLOOR
    return 0
