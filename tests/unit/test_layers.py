"""The layout is the architecture: every module has a layer, lower layers never import higher ones, no cycles.

Imports are read from the source (``ast``), lazy ones inside functions included; imports
under ``if TYPE_CHECKING:`` only name types and are left out.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = ("router", "sync")
# Lowest first. A module may import its own package and the packages of lower layers; packages
# that share a layer never import each other, except in the application, whose packages compose
# one another (the cycle test still holds them). The client and the integrations stand apart.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("common", ("router.common",)),
    ("storage and embedding", ("router.storage", "router.embedding")),
    ("catalog", ("router.catalog",)),
    ("retrieval and sessions", ("router.retrieval", "router.sessions")),
    ("routing and the model APIs' shapes", ("router.routing", "router.tools")),
    ("sync", ("sync",)),
    (
        "application",
        (
            "router.api",
            "router.server",
            "router.mcp",
            "router.console",
            "router.evaluate",
            "router.app",
            "router.cli",
        ),
    ),
]
APPLICATION = LAYERS[-1][1]
# Importable without the server's dependencies: they import only the client (and themselves).
APART = {"router.client": ("router.client",), "router.integrations": ("router.client", "router.integrations")}
ENTRY = ("router",)  # the package itself


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[tuple[str, list[str]]]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]))
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, [alias.name for alias in node.names]
        else:
            yield from _imports(node)


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        for module, names in _imports(ast.parse(path.read_text())):
            if module.split(".")[0] not in PACKAGES:
                continue
            submodules = [f"{module}.{n}" for n in names if f"{module}.{n}" in modules]
            edges.update(submodules or [module])
        graph[name] = edges - {name}
    return graph


def _within(module: str, layer: str) -> bool:
    return module == layer or module.startswith(layer + ".")


def _unit(module: str) -> str | None:
    """The package of ``LAYERS`` or ``APART`` that ``module`` belongs to."""
    units = [u for _, units in LAYERS for u in units] + list(APART)
    return next((u for u in units if _within(module, u)), None)


def _rank(unit: str) -> int:
    return next(i for i, (_, units) in enumerate(LAYERS) if unit in units)


def test_every_module_has_a_layer() -> None:
    assert [m for m in _graph() if m not in ENTRY and _unit(m) is None] == []


def test_lower_layers_never_import_higher_ones_nor_their_peers() -> None:
    wrong = []
    for module, targets in _graph().items():
        unit = _unit(module)
        if unit is None or unit in APART:
            continue
        for target in sorted(targets):
            other = _unit(target)
            if other is None or other == unit or (unit in APPLICATION and other in APPLICATION):
                continue
            if other in APART or _rank(other) >= _rank(unit):
                wrong.append(f"{module} imports {target}")
    assert wrong == []


def test_the_client_and_integrations_import_only_the_client() -> None:
    outside = {
        f"{module} imports {target}"
        for module, targets in _graph().items()
        if (unit := _unit(module)) in APART
        for target in targets
        if target not in ENTRY and not any(_within(target, allowed) for allowed in APART[unit])
    }
    assert outside == set()


def test_no_import_cycles() -> None:
    graph = _graph()
    cycles = [sorted(component) for component in _components(graph) if len(component) > 1]
    assert cycles == []


def _components(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components (Tarjan), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    found.append(component)
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


@pytest.mark.parametrize(
    ("graph", "cyclic"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, False),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, True),
    ],
)
def test_cycle_detection_finds_a_cycle(graph: dict[str, set[str]], cyclic: bool) -> None:
    assert any(len(c) > 1 for c in _components(graph)) is cyclic
