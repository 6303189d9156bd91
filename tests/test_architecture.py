"""The house rules, checked on the source: floors import only downward, and no import cycles
(function-local imports and package `__init__` modules count)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

#: Each floor and the floors it must not import (protocol <- log <- txn <- spark <- tables).
FORBIDDEN = {
    "pydelta.protocol": ("pydelta.log", "pydelta.txn", "pydelta.spark", "pydelta.tables"),
    "pydelta.log": ("pydelta.txn", "pydelta.spark", "pydelta.tables"),
    "pydelta.txn": ("pydelta.spark", "pydelta.tables"),
    "pydelta.spark": ("pydelta.tables",),
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in (SRC / "pydelta").rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The module an imported name lives in (`pkg.mod.func` -> `pkg.mod`)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            if name.startswith("pydelta"):
                owner = _owner(name, modules)
                if owner is not None:
                    found.add(owner)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        targets = _imports(path, modules) - {name}
        for target in list(targets):  # importing a.b.c runs the __init__ of a.b (not of packages holding `name`)
            parts = target.split(".")
            for i in range(1, len(parts)):
                package = ".".join(parts[:i])
                if package in modules and not name.startswith(package + "."):
                    targets.add(package)
        graph[name] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_floors_import_downward():
    wrong = []
    for name, targets in _graph().items():
        for floor, forbidden in FORBIDDEN.items():
            if name == floor or name.startswith(floor + "."):
                wrong.extend(f"{name} -> {t}" for t in targets if t.startswith(forbidden))
    assert wrong == []


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_the_cycle_check_sees_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
