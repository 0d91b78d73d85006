"""``router eval`` with the real model and embedded storage: the example catalog, the CI gate, stored sessions.

The command runs as ``python -m router.cli`` from this checkout (a process loads the model
itself, so those runs are few); the rest drives the evaluation in-process with the session's model.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from router.catalog.functions import parse_document
from router.catalog.records import MetaStore
from router.embedding import Embedder, EmbedderPool
from router.evaluate.cases import CasesInvalid, load_cases
from router.evaluate.catalogs import CatalogUnavailable, from_router
from router.evaluate.peers import DenseBaseline, PerSentenceBaseline, bigtool_text
from router.evaluate.run import (
    BM25,
    COLD,
    DENSE,
    LEARNED,
    ROUTER,
    SENTENCES,
    Options,
    evaluate_cases,
    evaluate_sessions,
)
from router.retrieval.index import FunctionStore
from router.server.settings import AuthSettings, Settings, StorageSettings
from router.sessions.history import MESSAGES
from router.storage.edge import EdgeStorage
from tests.conftest import EXAMPLE_COUNTS, EXAMPLES, ROOT, Served, bare, router_environment
from tests.docs import marked

pytestmark = pytest.mark.integration

CASES = ROOT / "examples" / "cases.jsonl"
DOCS = ROOT / "docs" / "evaluate.md"
HEADS = ["R@1", "R@3", "R@5", "R@10", "all@1", "all@3", "all@5", "all@10", "MRR"]
EMAIL = bare("send_email", "Send an email message.", to="Recipient", body="Text")
SLACK = bare("post_slack_message", "Post a message to a chat channel.", channel="Channel", text="Text")
JIRA = bare("create_jira_issue", "Open a ticket in the tracker.", summary="Summary")
PAGE = bare("page_oncall", "Page the on-call engineer.", severity="Severity")
WEATHER = bare("get_weather", "Current weather for a city.", city="City")
OPS = [EMAIL, SLACK, JIRA, PAGE, WEATHER]
ASKED = "give the crew a heads-up about the maintenance window"
# The same request in other words: one stored run speaks for it (a wider neighbourhood needs runs that agree).
LATER = "give the crew a heads up about tonight's maintenance window"


def router_eval(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "router.cli", "eval", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=240,
        env=router_environment(),
        cwd=ROOT,
        check=False,
    )


def documented(name: str) -> list[str]:
    """The arguments of the ``router eval`` command of ``docs/evaluate.md`` marked ``name``."""
    words = shlex.split(marked(DOCS, name))
    assert words[:2] == ["router", "eval"]
    return words[2:]


def test_the_documented_commands_print_the_table_and_pass_the_floor() -> None:
    table, gate = documented("eval-table"), documented("eval-gate")
    assert gate[: len(table)] == table
    started = time.monotonic()
    result = router_eval(*gate)
    took = time.monotonic() - started

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    catalogs = ", ".join(EXAMPLE_COUNTS)
    functions = sum(EXAMPLE_COUNTS.values())
    assert lines[0] == (
        f"10 cases in 4 catalogs ({catalogs}; {functions} functions), routing as configured (max_functions 3)"
    )
    assert lines[2].split() == HEADS
    rows = {line.split("  ")[0]: line for line in lines[3:7]}
    assert list(rows) == [ROUTER, DENSE, BM25, SENTENCES]
    for row in rows.values():
        assert all(0 <= float(v) <= 1 for v in row.split()[-len(HEADS) :])
    assert "Most often missed by the router (not in its top 5):" in lines or (
        "The router returned every needed function in its top 5." in lines
    )
    assert any(line.startswith("max_functions: ") for line in lines)
    assert lines[-1].startswith("gate: R@5 of the router is ")
    assert lines[-1].endswith("at or above the floor 0.90")
    assert "routing cases" not in result.stdout  # a progress bar goes to a terminal's stderr only
    assert took < 120


def test_json_output_and_the_gate_failing_below_its_floor() -> None:
    result = router_eval("--catalog", EXAMPLES, "--cases", CASES, "--json", "--min-recall", "0.99", "--k", "1")

    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert list(report["methods"]) == [ROUTER, DENSE, BM25, SENTENCES]
    assert set(report["methods"][ROUTER]) == set(HEADS)
    assert len(report["cases"]) == 10
    assert report["cases"][0]["expected"] == ["search_flights"]
    assert report["cases"][0]["namespace"] == "travel"
    recall = report["methods"][ROUTER]["R@1"]
    assert report["gate"] == {"k": 1, "min_recall": 0.99, "recall": recall, "passed": False}
    assert result.stderr.splitlines()[-1] == f"router eval: R@1 of the router is {recall:.2f}, below the floor 0.99"


def test_a_bad_cases_file_exits_2_naming_the_line(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"request": "refund it", "expected": ["issue_refund"]}\n{"request": "track it"}\n')

    result = router_eval("--catalog", EXAMPLES, "--cases", cases)

    assert result.returncode == 2
    assert result.stderr.strip() == f"router eval: {cases}:2: expected: must be a non-empty list of function names"
    assert result.stdout == ""


def test_every_mistake_of_a_cases_file_is_said_at_once(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        '{"request": "refund it", "expected": ["issue_refund"]}\n{"request": "track it"}\n'
        '{"request": "lock the door", "expected": ["lock_dor"]}\n'
    )

    result = router_eval("--catalog", EXAMPLES, "--cases", cases)

    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"router eval: {cases}:2: expected: must be a non-empty list of function names",
        f"{cases}:3: expected: no catalog has ['lock_dor']",
    ]


def test_one_catalog_of_a_shared_cases_file(tmp_path: Path) -> None:
    result = router_eval("--catalog", EXAMPLES, "--cases", CASES, "--namespace", "travel")

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("4 cases in 1 catalog (travel; 15 functions)")
    left = f"({CASES}:5, {CASES}:6, {CASES}:7, ...)"
    assert f"note: 6 cases of other catalogs than 'travel' were left out {left}" in lines
    assert router_eval("--catalog", EXAMPLES, "--cases", CASES, "--k", "101").stderr.strip() == (
        "router eval: --k 101 must be from 1 to 100: ranks are read to depth 100"
    )


async def test_a_case_expecting_a_function_the_catalog_lacks_is_refused(
    tmp_path: Path, embedders: EmbedderPool
) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"request": "refund it", "expected": ["issue_refund", "refund_everything"]}\n')
    options = Options(load_cases(cases), catalog=EXAMPLES / "commerce.json")

    with pytest.raises(CasesInvalid, match=rf"{cases}:1: expected: catalog 'commerce' has no function named"):
        await evaluate_cases(Settings(), embedders, options)


async def test_one_catalog_file_and_the_cases_ranks(embedders: EmbedderPool, monkeypatch: pytest.MonkeyPatch) -> None:
    cases = [c for c in load_cases(CASES) if "rollback_deployment" in c.expected]
    options = Options(cases, catalog=EXAMPLES / "devops.json")
    # The catalog goes to a throwaway directory, whatever server the environment names for the sidecar.
    monkeypatch.setenv("ROUTER_STORAGE_QDRANT_URL", "http://127.0.0.1:9")

    evaluation = await evaluate_cases(Settings(), embedders, options)

    assert evaluation.functions == EXAMPLE_COUNTS["devops"]
    assert [c.namespace for c in evaluation.cases] == ["devops"]
    assert evaluation.methods[ROUTER] == [{"rollback_deployment": 1}]
    assert evaluation.methods[DENSE][0]["rollback_deployment"] == 1


async def test_catalogs_are_read_from_a_running_router(serve: Callable[..., Any]) -> None:
    async with serve() as served:
        await put_ops(served)
        transport = httpx.ASGITransport(app=served.app)

        read = await from_router("http://test/", None, api_key=None, transport=transport)
        with pytest.raises(CatalogUnavailable, match="no such catalog"):
            await from_router("http://test", "moon", api_key=None, transport=transport)

    assert list(read) == ["ops"]
    assert sorted(f.name for f in read["ops"].functions) == sorted(f["name"] for f in OPS)


async def test_a_router_with_keys_gives_the_catalogs_its_key_may_use(serve: Callable[..., Any]) -> None:
    keys = {"travel-key-0123456789": ["travel"]}
    async with serve(catalog=EXAMPLES, auth=AuthSettings(api_keys=json.dumps(keys))) as served:
        transport = httpx.ASGITransport(app=served.app)

        read = await from_router("http://test", None, api_key="travel-key-0123456789", transport=transport)
        with pytest.raises(CatalogUnavailable, match="401: an API key is required: set ROUTER_API_KEY or --api-key"):
            await from_router("http://test", "travel", api_key=None, transport=transport)
        with pytest.raises(CatalogUnavailable, match="401: an API key is not valid for it"):
            await from_router("http://test", "travel", api_key="wrong-key-0123456789", transport=transport)

    assert list(read) == ["travel"]
    assert len(read["travel"].functions) == EXAMPLE_COUNTS["travel"]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def calls(*names: str) -> dict[str, Any]:
    tools = [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": "{}"}} for i, n in enumerate(names)
    ]
    return {"role": "assistant", "content": None, "tool_calls": tools}


async def put_ops(served: Served) -> None:
    response = await served.client.put("/v1/catalogs/ops", json={"functions": OPS})
    assert response.status_code == 200, response.text


async def post_run(served: Served, session: str, messages: list[dict[str, Any]], namespace: str = "ops") -> None:
    body = {"namespace": namespace, "messages": messages}
    response = await served.client.post(f"/v1/sessions/{session}/messages", json=body)
    assert response.status_code == 200, response.text


async def store_sessions(served: Served) -> None:
    """Four runs of namespace ops (three calling functions), and one run of another namespace."""
    await put_ops(served)
    await served.client.put("/v1/catalogs/other", json={"functions": [WEATHER]})
    await post_run(served, "s1", [user(ASKED), calls("send_email"), {"role": "tool", "content": "sent"}])
    await post_run(served, "s2", [user("thanks, that is all"), {"role": "assistant", "content": "bye"}])
    await post_run(served, "s3", [user(LATER), calls("send_email", "retired_tool")])
    await post_run(
        served, "s1", [user("page the on-call and open a ticket"), calls("page_oncall", "create_jira_issue")]
    )
    await post_run(served, "s4", [user("weather in Paris"), calls("get_weather")], namespace="other")


def stored_counts(data: Path) -> tuple[int, int]:
    """Messages and usage examples in a data directory (read after its router stopped)."""
    storage = EdgeStorage(data)
    try:
        generation = MetaStore.open(storage).active_generation()
        assert generation is not None
        examples = FunctionStore.open(storage, generation).examples
        return storage.collection(MESSAGES).count(), examples.count("ops")
    finally:
        storage.close()


async def test_stored_sessions_become_cases_replayed_in_time_order(
    serve: Callable[..., Any], tmp_path: Path, embedders: EmbedderPool
) -> None:
    async with serve() as served:
        await store_sessions(served)
    data = tmp_path / "data"
    before = stored_counts(data)
    settings = Settings(storage=StorageSettings(data=data))

    evaluation = await evaluate_sessions(settings, embedders, Options(from_sessions="ops"))

    assert [(c.request, c.expected, c.namespace) for c in evaluation.cases] == [
        (ASKED, ("send_email",), "ops"),
        (LATER, ("send_email",), "ops"),
        ("page the on-call and open a ticket", ("page_oncall", "create_jira_issue"), "ops"),
    ]
    assert [c.where for c in evaluation.cases] == ["run 1 (session s1)", "run 3 (session s3)", "run 4 (session s1)"]
    cold, learned = evaluation.methods[COLD], evaluation.methods[LEARNED]
    # The first case is routed before anything is learned, as it was in production.
    assert learned[0] == cold[0]
    # The second was asked after the first run called send_email for a request like it.
    assert cold[1]["send_email"] is not None
    assert cold[1]["send_email"] >= 3
    assert learned[1] == {"send_email": 1}
    assert evaluation.router == LEARNED
    assert list(evaluation.methods) == [COLD, LEARNED, DENSE, BM25, SENTENCES]
    assert evaluation.notes == [
        "3 of 4 stored runs called functions of the catalog; each request behind their calls is a case",
        "calls of functions no longer in the catalog were left out: retired_tool",
    ]
    assert stored_counts(data) == before  # the sessions' store was only read


async def test_from_sessions_on_the_command_line(tmp_path: Path, serve: Callable[..., Any]) -> None:
    async with serve() as served:
        await store_sessions(served)

    result = await asyncio.to_thread(router_eval, "--from-sessions", "ops", "--data", tmp_path / "data", "--json")
    missing = await asyncio.to_thread(router_eval, "--from-sessions", "ops", "--data", tmp_path / "nowhere")

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert list(report["methods"]) == [COLD, LEARNED, DENSE, BM25, SENTENCES]
    assert report["router"] == LEARNED
    assert [c["expected"] for c in report["cases"]] == [
        ["send_email"],
        ["send_email"],
        ["page_oncall", "create_jira_issue"],
    ]
    assert report["cases"][1]["ranks"][LEARNED] == {"send_email": 1}
    assert missing.returncode == 2
    assert "does not exist" in missing.stderr


async def test_the_per_sentence_peer_brings_each_sentences_function(embedder: Embedder) -> None:
    functions = parse_document(json.loads((EXAMPLES / "travel.json").read_text()), source="travel.json").functions
    dense = await asyncio.to_thread(DenseBaseline, embedder, functions, bigtool_text)
    request = "Find flights from Boston to Lisbon on May 3. Then check whether I need a visa for Portugal."

    (ranked,) = await PerSentenceBaseline(dense, embedder).rank([request], k=4)

    assert {"search_flights", "check_visa_requirements"} <= set(ranked[:2])
    assert len(ranked) == len(set(ranked)) == 4
