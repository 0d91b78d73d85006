"""docker-compose.yml and the Dockerfile, checked without a Docker engine.

The compose file is read as YAML (anchors and merge keys resolved): every service has a
healthcheck, images are pinned, dependencies wait for health, data lives in named volumes,
the router's command lines and settings are valid, and the ``cluster`` profile wires three
Qdrant nodes into one cluster. Where the ``docker compose`` CLI exists it checks the file too.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from router import cli
from router.server.settings import Settings, StorageSettings
from tests.conftest import QDRANT_IMAGE, ROOT

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
SINGLE = {name for name, service in SERVICES.items() if "profiles" not in service}
CLUSTER = {name for name, service in SERVICES.items() if "cluster" in service.get("profiles", [])}
NODES = sorted(name for name in CLUSTER if SERVICES[name].get("image") == QDRANT_IMAGE)
_DEFAULT = re.compile(r"\$\{(\w+):-([^}]*)\}")


def interpolated(value: object) -> str:
    """A compose value with each ``${NAME:-default}`` replaced by its default (nothing set in the shell)."""
    return _DEFAULT.sub(lambda m: m.group(2), str(value))


def environment(name: str) -> dict[str, str]:
    return {key: interpolated(value) for key, value in SERVICES[name].get("environment", {}).items()}


def flag(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def routers() -> list[str]:
    return [name for name, service in SERVICES.items() if "build" in service]


def test_the_default_stack_and_the_cluster_profile() -> None:
    single, cluster, nodes = SINGLE, CLUSTER, NODES

    assert single == {"qdrant", "sync", "api", "gateway"}
    assert cluster == {*nodes, "sync-cluster", "api-cluster", "gateway-cluster"}
    assert nodes == ["qdrant-node-1", "qdrant-node-2", "qdrant-node-3"]


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_every_service_has_a_healthcheck(name: str) -> None:
    check = SERVICES[name]["healthcheck"]
    assert check["test"][0] in ("CMD", "CMD-SHELL")
    assert len(check["test"]) > 1
    assert {"interval", "timeout", "retries"} <= set(check)


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_every_image_is_pinned(name: str) -> None:
    image = SERVICES[name]["image"]
    repository, _, tag = image.rpartition(":")
    assert repository
    assert re.fullmatch(r"v?\d+\.\d+\.\d+(-[a-z0-9.]+)?", tag), f"{name}: {image} is not pinned to a version"


def test_qdrant_is_the_version_the_server_tests_run() -> None:
    assert SERVICES["qdrant"]["image"] == QDRANT_IMAGE
    assert all(SERVICES[name]["image"] == QDRANT_IMAGE for name in NODES)


def test_the_router_services_build_this_checkout() -> None:
    for name in routers():
        assert SERVICES[name]["build"]["context"] == "."
        assert SERVICES[name]["image"] == f"tool-router:{VERSION}"
    assert set(routers()) == {"sync", "api", "sync-cluster", "api-cluster"}


@pytest.mark.parametrize("name", sorted(n for n in SERVICES if "depends_on" in SERVICES[n]))
def test_dependencies_wait_until_healthy(name: str) -> None:
    for dependency, condition in SERVICES[name]["depends_on"].items():
        assert condition == {"condition": "service_healthy"}, (name, dependency)
        assert "healthcheck" in SERVICES[dependency]
        assert SERVICES[dependency].get("profiles") == SERVICES[name].get("profiles"), "same stack"


def test_the_api_waits_for_the_first_sync_and_the_gateway_for_the_api() -> None:
    for suffix in ("", "-cluster"):
        assert f"sync{suffix}" in SERVICES[f"api{suffix}"]["depends_on"]
        assert f"api{suffix}" in SERVICES[f"gateway{suffix}"]["depends_on"]
        assert environment(f"gateway{suffix}")["ROUTER_API"] == f"api{suffix}"


def test_qdrant_data_lives_in_named_volumes() -> None:
    declared = set(COMPOSE["volumes"])
    used = []
    for name in ["qdrant", *NODES]:
        (mount,) = SERVICES[name]["volumes"]
        volume, target = mount.split(":")
        assert target == "/qdrant/storage"
        assert volume in declared
        used.append(volume)
    assert len(set(used)) == len(used) == 4, "each node keeps its own storage"
    assert set(used) == declared


def test_the_sync_worker_watches_a_mounted_catalog_directory_and_reports_readiness() -> None:
    for name in ("sync", "sync-cluster"):
        command = SERVICES[name]["command"]
        (mount,) = SERVICES[name]["volumes"]
        source, target, mode = interpolated(mount).split(":")
        assert command[:3] == ["router", "sync", "--watch"]
        assert flag(command, "--catalog") == target == "/catalog"
        assert mode == "ro"
        assert (ROOT / source).is_dir()
        assert SERVICES[name]["healthcheck"]["test"] == ["CMD", "test", "-f", flag(command, "--ready-file")]


@pytest.mark.parametrize("name", ["sync", "api", "sync-cluster", "api-cluster"])
def test_router_command_lines_and_settings_are_valid(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in environment(name).items():
        monkeypatch.setenv(key, value)

    settings = cli.settings_from(cli.parser().parse_args(SERVICES[name]["command"][1:]))

    assert isinstance(settings, Settings)
    assert not settings.storage.embedded
    host = re.fullmatch(r"http://([\w.-]+):6333", str(settings.storage.qdrant_url))
    assert host is not None
    aliases = {n: SERVICES[n].get("networks", {}).get("default", {}).get("aliases", []) for n in SERVICES}
    if name.endswith("-cluster"):
        assert all(host.group(1) in aliases[node] for node in NODES), "the router reaches any running node"
    else:
        assert host.group(1) == "qdrant"


def test_the_cluster_collections_are_sharded_and_replicated() -> None:
    for name in ("sync-cluster", "api-cluster"):
        storage = StorageSettings(**{k.removeprefix("ROUTER_STORAGE_").lower(): v for k, v in _storage(name).items()})
        assert storage.shard_number is not None
        assert storage.shard_number >= len(NODES)
        assert storage.replication_factor == 2
        assert storage.write_consistency_factor is not None
        assert storage.write_ordering in ("medium", "strong")
    assert _storage("sync-cluster") == _storage("api-cluster"), "the worker and the replicas agree"


def _storage(name: str) -> dict[str, str]:
    return {k: v for k, v in environment(name).items() if k.startswith("ROUTER_STORAGE_")}


def test_the_api_scales_to_several_replicas() -> None:
    assert SERVICES["api-cluster"]["deploy"]["replicas"] >= 2
    for name in ("api", "api-cluster"):
        assert "ports" not in SERVICES[name], "replicas publish no port of their own: the gateway does"
        assert "container_name" not in SERVICES[name]


def test_three_nodes_form_one_cluster_bootstrapped_by_the_first() -> None:
    first, *joining = NODES
    uris = {}
    for name in NODES:
        service = SERVICES[name]
        assert environment(name)["QDRANT__CLUSTER__ENABLED"] == "true"
        command = service["command"]
        assert command[0] == "./qdrant"
        uris[name] = flag(command, "--uri")
        assert uris[name] == f"http://{name}:6335", "each peer announces its own p2p address"
    assert "--bootstrap" not in SERVICES[first]["command"]
    for previous, name in zip(NODES, joining, strict=False):
        assert flag(SERVICES[name]["command"], "--bootstrap") == uris[first]
        assert SERVICES[name]["depends_on"] == {previous: {"condition": "service_healthy"}}, "one joins at a time"


def test_the_gateway_template_proxies_to_the_named_replicas() -> None:
    template = (ROOT / "deploy" / "gateway.conf.template").read_text()
    for name in ("gateway", "gateway-cluster"):
        (mount,) = SERVICES[name]["volumes"]
        source, target, _ = mount.split(":")
        assert (ROOT / source).resolve() == (ROOT / "deploy" / "gateway.conf.template").resolve()
        assert target == "/etc/nginx/templates/default.conf.template"
        # Without API keys the replicas are open: by default a gateway listens on loopback only.
        assert interpolated(SERVICES[name]["ports"][0]).startswith("127.0.0.1:")
        assert interpolated(SERVICES[name]["ports"][0]).endswith(":8000")
    assert "${ROUTER_API}" in template
    assert "listen 8000;" in template
    assert "resolver 127.0.0.11" in template


DOCKERFILE = (ROOT / "Dockerfile").read_text()


def test_the_image_builds_this_checkout_with_cpu_torch_and_the_model_inside() -> None:
    froms = re.findall(r"^FROM (\S+)", DOCKERFILE, re.MULTILINE)
    base = re.search(r"^ARG PYTHON_IMAGE=(\S+)", DOCKERFILE, re.MULTILINE)
    assert base is not None
    assert re.fullmatch(r"python:\d+\.\d+\.\d+-slim-\w+", base.group(1))
    assert froms == ["${PYTHON_IMAGE}", "${PYTHON_IMAGE}"]
    assert "ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu" in DOCKERFILE
    assert 'pip install --index-url "$TORCH_INDEX_URL" -c constraints.txt torch' in DOCKERFILE
    assert "COPY router ./router" in DOCKERFILE
    assert "COPY sync ./sync" in DOCKERFILE
    assert "pip install -c constraints.txt ." in DOCKERFILE
    assert "RUN router warm" in DOCKERFILE
    assert "HF_HUB_OFFLINE=1" in DOCKERFILE
    assert "HEALTHCHECK" in DOCKERFILE


def test_the_image_runs_as_a_user_of_its_own() -> None:
    final = DOCKERFILE[DOCKERFILE.rindex("\nFROM ") :]
    users = re.findall(r"^USER (\S+)", final, re.MULTILINE)
    assert users == ["router"]
    assert final.index("USER router") < final.index("RUN router warm") < final.index("CMD [")


def test_the_build_context_leaves_out_what_the_image_does_not_need() -> None:
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".git", ".venv", "data", "tests", "benchmarks"} <= ignored
    needed = {"router", "sync", "examples", "pyproject.toml", "constraints.txt", "README.md"}
    assert not needed & ignored


@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker CLI")
@pytest.mark.parametrize("profile", [[], ["--profile", "cluster"]])
def test_docker_compose_accepts_the_file(profile: list[str]) -> None:
    version = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, check=False)
    if version.returncode != 0:
        pytest.skip("the docker CLI has no compose plugin here")
    checked = subprocess.run(
        ["docker", "compose", "-f", str(ROOT / "docker-compose.yml"), *profile, "config", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert checked.returncode == 0, checked.stderr


def test_docker_compose_yml_names_no_file_that_is_missing() -> None:
    assert (ROOT / "Dockerfile").is_file()
    assert Path(ROOT / interpolated("${ROUTER_CATALOG:-./examples/catalog}")).is_dir()
