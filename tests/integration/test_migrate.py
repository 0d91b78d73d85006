"""Moving an embedded deployment to a Qdrant server: every point with its vectors, idempotently,
and a router in server mode answers exactly as the embedded one did.

The server here is qdrant-client's in-memory mode (the server's API, in process);
``tests/server`` runs the same checks against a real Qdrant server.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from router import cli
from router.embedding import EmbedderPool
from router.server.migrate import copy_directory, migrate
from router.sessions.history import MESSAGES
from router.storage.base import CollectionSpec, PointData, Storage, StorageUnavailable
from router.storage.client import ClientStorage
from router.storage.edge import EdgeStorage
from router.storage.edge_export import EdgeExport
from tests.conftest import EXAMPLES, run_app
from tests.integration.test_route_sessions import post, route

pytestmark = pytest.mark.integration

TOOL_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "send_email", "arguments": "{}"}}],
}
RUNS: list[tuple[str, str, dict[str, Any], list[dict[str, Any]]]] = [
    (
        "trip",
        "travel",
        {"user_id": "ana"},
        [
            {"role": "user", "content": "I am vegetarian and I prefer aisle seats. Find flights from Lisbon to Rome."},
            {"role": "assistant", "content": "I found TP 840, AZ 201 and FR 123."},
        ],
    ),
    (
        "ops",
        "devops",
        {},
        [
            {"role": "user", "content": "Deploy version 2.4.1 of the checkout service to production"},
            {"role": "assistant", "content": "Deployment started."},
        ],
    ),
    (
        "mail",
        "workspace",
        {"user_id": "bo"},
        [
            {"role": "user", "content": "give the crew a heads-up about the maintenance window"},
            TOOL_CALL,
            {"role": "tool", "tool_call_id": "c1", "content": "sent"},
        ],
    ),
]
PROBES: list[tuple[str, str, dict[str, Any]]] = [
    ("travel", "Book TP 840 for John Smith", {"session_id": "trip", "user_id": "ana"}),
    ("travel", "Which meal can I get on my flight?", {"session_id": "friday", "user_id": "ana"}),
    ("devops", "Undo that", {"session_id": "ops"}),
    ("workspace", "give the crew a heads-up about tonight's maintenance window", {"user_id": "bo", "max_functions": 5}),
    ("commerce", "Where is my parcel? It has not arrived yet", {}),
]


@dataclass
class Deployment:
    """An embedded data directory with catalogs, history, routes, memories and usage examples, and its answers."""

    data: Path
    answers: list[dict[str, Any]]


async def answers(client: Any) -> list[dict[str, Any]]:
    """The route answers to every probe."""
    return [await route(client, namespace, text, **fields) for namespace, text, fields in PROBES]


async def build(data: Path, embedders: EmbedderPool) -> Deployment:
    """Serve the examples embedded on ``data``, store a few runs, record the probes' answers, stop."""
    async with run_app(data=data, pool=embedders, catalog=EXAMPLES) as served:
        for session, namespace, fields, messages in RUNS:
            if TOOL_CALL in messages:  # routed first, so that its call is checked and kept
                await route(served.client, namespace, messages[0]["content"], session_id=session)
            await post(served.client, session, messages, namespace=namespace, **fields)
        recorded = await answers(served.client)
    return Deployment(data, recorded)


def same_answers(found: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    """Functions, scores, history and memories alike (scores to the float32 precision of the engines)."""
    for got, want in zip(found, expected, strict=True):
        for part, key in (("functions", "name"), ("memories", "text")):
            assert [f[key] for f in got[part]] == [f[key] for f in want[part]]
            assert [f["score"] for f in got[part]] == pytest.approx([f["score"] for f in want[part]], abs=1e-4)
        assert got["history"] == want["history"]
        assert got["memory_context"] == want["memory_context"]


def stored_points(data: Path) -> dict[str, dict[str, PointData]]:
    """Every point of the data directory with its vectors, by collection and id."""
    source = EdgeExport(data)
    try:
        result: dict[str, dict[str, PointData]] = {}
        for name in source.names():
            with source.open(name) as stored:
                result[name] = {p.id: p for batch in stored.points(batch=7) for p in batch}
        return result
    finally:
        source.close()


def assert_same_points(expected: dict[str, dict[str, PointData]], target: ClientStorage, prefix: str) -> None:
    """The server holds exactly the directory's points: ids, payloads and both vectors."""
    client = target.client
    assert {c.name for c in client.get_collections().collections if c.name.startswith(prefix)} == {
        prefix + name for name in expected
    }
    for name, points in expected.items():
        assert client.count(prefix + name, exact=True).count == len(points)
        if not points:
            continue
        found = {str(r.id): r for r in client.retrieve(prefix + name, list(points), with_vectors=True)}
        assert found.keys() == points.keys()
        for point_id, point in points.items():
            record = found[point_id]
            vectors: dict[str, Any] = record.vector or {}  # type: ignore[assignment]
            assert record.payload == dict(point.payload)
            if point.dense is None:
                assert "dense" not in vectors
            else:
                assert vectors["dense"] == pytest.approx(list(point.dense), abs=1e-6)
            if point.sparse is not None:
                assert vectors["sparse"].indices == point.sparse.indices
                assert vectors["sparse"].values == pytest.approx(point.sparse.values)


@pytest.fixture(scope="module")
async def deployment(tmp_path_factory: pytest.TempPathFactory, embedders: EmbedderPool) -> Deployment:
    """One embedded deployment for the module; tests only read it (the migration locks it while copying)."""
    return await build(tmp_path_factory.mktemp("embedded") / "data", embedders)


@pytest.fixture
def target() -> Iterator[ClientStorage]:
    storage = ClientStorage.in_memory()
    yield storage
    storage.close()


def run(data: Path, target: Storage, **options: Any) -> Any:
    source = EdgeExport(data)
    try:
        return migrate(source, target, **options)
    finally:
        source.close()


def test_every_collection_is_copied_with_ids_payloads_and_vectors(
    deployment: Deployment, target: ClientStorage
) -> None:
    expected = stored_points(deployment.data)

    result = run(deployment.data, target, batch=5)

    assert result.verified
    names = [c.name for c in result.collections]
    assert names[-1] == "meta", "the generation pointer goes last"
    assert {n.split("-")[0] for n in names} == {
        "calls",
        "companions",
        "examples",
        "functions",
        "memories",
        "messages",
        "meta",
        "routes",
    }
    assert all(len(expected[c.name]) == c.source == c.target for c in result.collections)
    # These runs call one function each, and a run of one function has no companions.
    assert all(c.source > 0 for c in result.collections if c.name != "companions")
    assert result.points == sum(len(points) for points in expected.values())
    assert_same_points(expected, target, "router_")


def test_running_it_again_duplicates_nothing(deployment: Deployment, target: ClientStorage) -> None:
    first = run(deployment.data, target)
    again = run(deployment.data, target, batch=3)

    assert again.verified
    assert [(c.name, c.target) for c in again.collections] == [(c.name, c.target) for c in first.collections]
    assert_same_points(stored_points(deployment.data), target, "router_")


def test_points_only_on_the_server_are_reported_and_pruned_on_request(
    deployment: Deployment, target: ClientStorage
) -> None:
    run(deployment.data, target)
    extra = PointData(id="5f0c2a84-6a55-4f4e-9d0a-2a7b3c1d9e11", payload={"session_id": "elsewhere", "seq": 1})
    target.collection(MESSAGES).upsert([extra])

    kept = run(deployment.data, target)
    pruned = run(deployment.data, target, prune=True)

    [before] = [c for c in kept.collections if c.name == MESSAGES.name]
    [after] = [c for c in pruned.collections if c.name == MESSAGES.name]
    assert not kept.verified
    assert before.target == before.source + 1
    assert pruned.verified
    assert (after.pruned, after.target) == (1, after.source)
    assert sum(c.pruned for c in pruned.collections) == 1


async def test_a_server_mode_router_answers_as_the_embedded_one_did(
    deployment: Deployment, target: ClientStorage, embedders: EmbedderPool
) -> None:
    assert run(deployment.data, target).verified

    async with run_app(data=deployment.data, pool=embedders, storage=target) as served:
        assert not served.runtime.settings.storage.embedded
        same_answers(await answers(served.client), deployment.answers)

    follow_up, meal, undo, heads_up, _ = deployment.answers
    assert follow_up["functions"][0]["name"] == "book_flight"
    assert len(follow_up["history"]) == 2
    assert "vegetarian" in meal["memory_context"]
    assert undo["functions"][0]["name"] == "rollback_deployment"
    assert heads_up["functions"][0]["name"] == "send_email"


def test_a_data_directory_in_use_is_refused(deployment: Deployment) -> None:
    owner = EdgeStorage(deployment.data)
    try:
        with pytest.raises(StorageUnavailable, match="is in use by pid"):
            EdgeExport(deployment.data)
    finally:
        owner.close()


def test_a_missing_data_directory_is_refused_without_creating_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        EdgeExport(tmp_path / "nothing")
    assert not (tmp_path / "nothing").exists()


def test_the_command_reports_each_collection_and_verifies(
    deployment: Deployment, target: ClientStorage, capsys: pytest.CaptureFixture[str]
) -> None:
    code = copy_directory(deployment.data, target)

    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[-1].startswith("migrated ")
    assert out[-1].endswith(f"from {deployment.data} to :memory:; counts verified")
    messages = next(line for line in out if line.startswith("messages: "))
    count = len(stored_points(deployment.data)["messages"])
    assert messages == f"messages: {count} points copied, the server holds {count}"


def test_the_command_exits_1_naming_the_difference(
    deployment: Deployment, target: ClientStorage, capsys: pytest.CaptureFixture[str]
) -> None:
    target.collection(MESSAGES).upsert(
        [PointData(id="5f0c2a84-6a55-4f4e-9d0a-2a7b3c1d9e12", payload={"session_id": "x", "seq": 1})]
    )

    code = copy_directory(deployment.data, target)

    out = capsys.readouterr().out
    assert code == 1
    assert f"; 1 not in {deployment.data} (written since, or by another router; --prune)" in out
    assert out.splitlines()[-1].endswith("counts differ (see above)")


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["--data", "{tmp}/none", "--qdrant-url", "http://127.0.0.1:1"], 2, "data directory {tmp}/none does not exist"),
        (["--data", "{tmp}", "--qdrant-url", "http://127.0.0.1:1", "--batch", "0"], 2, "--batch must be at least 1"),
        (["--data", "{tmp}", "--qdrant-url", "http://127.0.0.1:1"], 2, "{tmp} holds no router data"),
    ],
)
def test_bad_command_lines_change_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: int, message: str
) -> None:
    assert cli.main(["migrate", *(a.format(tmp=tmp_path) for a in argv)]) == code
    assert message.format(tmp=tmp_path) in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_an_unreachable_server_exits_3(deployment: Deployment, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["migrate", "--data", str(deployment.data), "--qdrant-url", "http://127.0.0.1:1"])

    assert code == 3
    assert "router migrate: cannot reach Qdrant at http://127.0.0.1:1" in capsys.readouterr().err


def test_the_copy_of_a_collection_keeps_how_the_engine_weighs_its_words(tmp_path: Path) -> None:
    data = tmp_path / "data"
    storage = EdgeStorage(data)
    for engine_idf in (True, False):  # a store of the previous version, and one of this version
        storage.collection(CollectionSpec(f"idf-{engine_idf}", dense_size=4, sparse=True, sparse_idf=engine_idf))
    storage.close()

    source = EdgeExport(data)
    try:
        specs = {}
        for name in source.names():
            with source.open(name) as stored:
                specs[name] = stored.spec
    finally:
        source.close()

    assert specs["idf-True"].sparse_idf
    assert not specs["idf-False"].sparse_idf
    assert all(spec.sparse for spec in specs.values())
