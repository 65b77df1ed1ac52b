"""No import cycles between sleuth modules, not even ones hidden inside functions.

A function-level import can break a cycle at import time while the two modules still depend on
each other; so can an import under ``TYPE_CHECKING``. The graph here counts every import the
source holds — module level, inside functions, under ``TYPE_CHECKING`` — and ``from x import y``
where ``y`` is a submodule of ``x`` is an arrow to ``x.y``. Function-level imports that keep a
CLI start fast (ragas, kopf, qdrant...) stay allowed: only cycles fail.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC_TREES = [*sorted(p.parent for p in ROOT.glob("*/src/sleuth")), ROOT / "src"]

Graph = Mapping[str, set[str]]


def module_files(src_trees: Iterable[Path]) -> dict[str, Path]:
    """Module name → file, for every module under ``<tree>/sleuth/``."""
    found: dict[str, Path] = {}
    for tree in src_trees:
        for path in sorted((tree / "sleuth").rglob("*.py")):
            parts = list(path.relative_to(tree).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(files: Mapping[str, Path]) -> dict[str, set[str]]:
    """Arrows from each module to the sleuth modules it imports, wherever the import stands."""
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = _resolve(name, is_package, node)
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    targets.append(submodule if submodule in files else source)
            graph[name].update(t for t in targets if t in files and t != name)
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """One cycle through each strongly connected component of more than one module.

    Tarjan's algorithm finds the components; within each, a breadth-first search from its
    smallest module back to itself gives a shortest cycle to show.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(start: str) -> None:
        # iterative Tarjan: (node, iterator over its successors)
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph.get(succ, ())))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)

    found = []
    for component in components:
        first = min(component)
        paths = {first: [first]}
        queue = [first]
        cycle: list[str] = []
        while queue and not cycle:
            node = queue.pop(0)
            for succ in sorted(graph.get(node, ())):
                if succ == first:
                    cycle = [*paths[node], first]
                    break
                if succ in component and succ not in paths:
                    paths[succ] = [*paths[node], succ]
                    queue.append(succ)
        found.append(cycle)
    return sorted(found)


@pytest.mark.unit
def test_no_import_cycles_between_sleuth_modules() -> None:
    files = module_files(SRC_TREES)
    assert "sleuth.core.llm" in files  # the trees were found
    assert "sleuth.demo" in files
    found = cycles(import_graph(files))
    assert not found, "import cycles (move the shared piece one level down):\n" + "\n".join(
        " -> ".join(c) for c in found
    )


@pytest.mark.unit
def test_the_tools_do_not_import_the_tool_service_built_on_them() -> None:
    graph = import_graph(module_files(SRC_TREES))
    # the tools themselves: not the service, nor `sleuth ingest` (which reads a service's config)
    above = ("sleuth.tools.service", "sleuth.tools.ingest")
    tools = [
        m
        for m in graph
        if (m == "sleuth.tools" or m.startswith("sleuth.tools."))
        and not (m in above or m.startswith(tuple(f"{a}." for a in above)))
    ]
    assert "sleuth.tools.local" in tools
    wrong = sorted(
        f"{m} -> {t}" for m in tools for t in graph[m] if t.startswith("sleuth.tools.service")
    )
    assert not wrong, "tools import the service built on top of them:\n" + "\n".join(wrong)


@pytest.mark.unit
def test_the_detector_finds_a_cycle_in_a_tiny_graph() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"a"}}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    # two separate cycles, each shown once
    assert cycles({"a": {"b"}, "b": {"a"}, "x": {"y"}, "y": {"x"}}) == [
        ["a", "b", "a"],
        ["x", "y", "x"],
    ]


@pytest.mark.unit
def test_the_graph_sees_imports_inside_functions_and_type_checking(tmp_path: Path) -> None:
    package = tmp_path / "sleuth" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "api.py").write_text(
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from sleuth.pkg.models import Model\n"
    )
    (package / "models.py").write_text("def f():\n    from sleuth.pkg import api\n")
    (package / "util.py").write_text("from . import models\nfrom .models import f\n")
    graph = import_graph(module_files([tmp_path]))
    assert graph == {
        "sleuth.pkg": set(),
        "sleuth.pkg.api": {"sleuth.pkg.models"},
        "sleuth.pkg.models": {"sleuth.pkg.api"},  # `from pkg import api`: the submodule
        "sleuth.pkg.util": {"sleuth.pkg.models"},  # relative imports resolved
    }
    assert cycles(graph) == [["sleuth.pkg.api", "sleuth.pkg.models", "sleuth.pkg.api"]]
