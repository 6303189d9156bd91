"""The house rules, checked on the source: floors import only downward, and no import cycles
(function-local imports and package `__init__` modules count)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

#: Each floor and the floors it must not import (protocol <- log <- uniform <- txn <- spark <- tables).
FORBIDDEN = {
    "pydelta.protocol": ("pydelta.log", "pydelta.uniform", "pydelta.txn", "pydelta.spark", "pydelta.tables"),
    "pydelta.log": ("pydelta.uniform", "pydelta.txn", "pydelta.spark", "pydelta.tables"),
    "pydelta.uniform": ("pydelta.txn", "pydelta.spark", "pydelta.tables"),
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


def test_only_the_spark_layer_imports_pyspark():
    """The log core, the CLI and the light install run without pyspark (see test_light_install).
    pydelta.demo is the end-to-end demo on local Spark."""
    wrong = []
    for name, path in _modules().items():
        if name in ("pydelta.spark", "pydelta.demo") or name.startswith("pydelta.spark."):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            found = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            wrong.extend(f"{name} imports {m}" for m in found if m.split(".")[0] in ("pyspark", "py4j"))
    assert wrong == []


_SPARK_TYPES = {"Column", "DataFrame", "SparkSession"}


def _typing_names_used_at_run_time(path: Path) -> list[str]:
    """Uses of spark/_typing's names outside annotations: they are `Any` at run time."""
    tree = ast.parse(path.read_text())
    imported = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom)
                and n.module == "pydelta.spark.base._typing" for a in n.names} & _SPARK_TYPES
    if not imported:
        return []
    in_annotations = {id(m) for n in ast.walk(tree) for attr in ("annotation", "returns")
                      if getattr(n, attr, None) is not None for m in ast.walk(getattr(n, attr))}
    found: list[str] = []

    def visit(node: ast.AST, shadowed: set[str]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            shadowed = shadowed | {a.asname or a.name.split(".")[0] for m in ast.walk(node)
                                   if isinstance(m, (ast.Import, ast.ImportFrom)) for a in m.names}
        elif (isinstance(node, ast.Name) and node.id in imported and node.id not in shadowed
              and id(node) not in in_annotations):
            found.append(f"{path.name}:{node.lineno} {node.id}")
        for child in ast.iter_child_nodes(node):
            visit(child, shadowed)

    for top in tree.body:
        if not isinstance(top, (ast.Import, ast.ImportFrom)):
            visit(top, set())
    return found


def test_spark_type_names_are_only_annotations():
    wrong = [use for path in _modules().values() for use in _typing_names_used_at_run_time(path)]
    assert wrong == []


def test_the_type_name_check_sees_a_run_time_use(tmp_path: Path):
    bad = tmp_path / "bad.py"
    bad.write_text("from pydelta.spark.base._typing import DataFrame\n\ndef f(x: DataFrame) -> bool:\n"
                   "    return isinstance(x, DataFrame)\n")
    assert _typing_names_used_at_run_time(bad) == ["bad.py:4 DataFrame"]


def _function_lengths(path: Path) -> list[tuple[int, str]]:
    return [(n.end_lineno - n.lineno + 1, n.name) for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno is not None]


def test_modules_and_functions_stay_small():
    """The house's size limits: modules under 800 lines, functions under 150."""
    big_modules = [f"{name}: {n}" for name, path in _modules().items()
                   if (n := len(path.read_text().splitlines())) > 800]
    long_functions = [f"{name}.{fn}: {n}" for name, path in _modules().items()
                      for n, fn in _function_lengths(path) if n > 150]
    assert big_modules == [] and long_functions == []


#: The floors inside pydelta.spark, lowest first: a module imports only from its own floor or
#: below. The longest matching prefix gives a module its floor; every module must have one.
SPARK_FLOORS = {
    "pydelta.spark": 0,  # the package's import guard
    "pydelta.spark.base": 0,  # JVM and plan helpers, SQL tokens, conf, errors, storage, catalog
    "pydelta.spark.connect": 0,
    "pydelta.spark.base.connect_session": 0,
    "pydelta.spark.read": 1,
    "pydelta.spark.write": 2,
    "pydelta.spark.ddl": 3,
    "pydelta.spark.dml": 3,
    "pydelta.spark.maintenance": 3,
    "pydelta.spark.streaming": 3,
    "pydelta.spark.sql": 4,  # the two fronts, which never import each other
    "pydelta.spark.api": 4,
    "pydelta.spark.connect.grammar": 5,  # Connect's SQL front, built on both
    "pydelta.spark.connect.query_pruning": 5,
    "pydelta.spark.connect.describe": 5,
    "pydelta.spark.connect.statements": 5,
    "pydelta.spark.connect.router": 5,
    "pydelta.spark.connect.server": 6,  # the entrance: enable(), PySpark patches, the data source
    "pydelta.spark.patches": 6,
    "pydelta.spark.session": 6,
    "pydelta.spark.datasource": 6,
    "pydelta.spark.catalog_listing": 6,
    "pydelta.spark.migration": 6,
}
FRONTS = ("pydelta.spark.sql", "pydelta.spark.api")


def _floor(name: str) -> int | None:
    while name:
        if name in SPARK_FLOORS:
            return SPARK_FLOORS[name]
        name = name.rpartition(".")[0]
    return None


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _spark_arrows_up(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for name, targets in graph.items():
        if not _in(name, "pydelta.spark"):
            continue
        floor = _floor(name)
        for target in targets:
            if not _in(target, "pydelta.spark"):
                continue
            if floor is None or (_floor(target) or 0) > floor:
                wrong.append(f"{name} -> {target}")
            elif any(_in(name, a) and _in(target, b) for a in FRONTS for b in FRONTS if a != b):
                wrong.append(f"{name} -> {target} (the fronts)")
    return sorted(wrong)


def test_spark_rooms_import_downward():
    """read < write < ddl/dml/maintenance/streaming < the fronts (sql/, api/) < Connect's SQL < the entrance."""
    assert _spark_arrows_up(_graph()) == []


def test_the_floor_check_sees_an_arrow_up():
    graph = {"pydelta.spark.read.scan": {"pydelta.spark.write.options"},
             "pydelta.spark.sql.dml": {"pydelta.spark.api.delta_table"},
             "pydelta.spark.write.x": {"pydelta.spark.read.scan"}}
    assert _spark_arrows_up(graph) == ["pydelta.spark.read.scan -> pydelta.spark.write.options",
                                       "pydelta.spark.sql.dml -> pydelta.spark.api.delta_table (the fronts)"]
