"""The eval package's own floors: the commands take typed options, never an argparse namespace;
the parsers load no command; the reports sit below the runs (no import back up from
``retrieval``), and no two eval subpackages import each other."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.unit

EVALS = ROOT / "evals" / "src" / "sleuth" / "evals"


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(EVALS.parent.parent).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


def imports_in(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module ``source`` (the text of ``module``) imports, wherever the import stands
    (module level, in a function, under ``TYPE_CHECKING``); relative imports resolved;
    ``from x import y`` counts ``x`` and ``x.y``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if not is_package:
                    base.pop()
                base = base[: len(base) - (node.level - 1)]
                source_module = ".".join(base + ([node.module] if node.module else []))
            else:
                source_module = node.module or ""
            found.add(source_module)
            found.update(f"{source_module}.{alias.name}" for alias in node.names)
    return found


def imports_of(path: Path) -> set[str]:
    return imports_in(path.read_text(encoding="utf-8"), *_module_name(path))


def _files(sub: str = "") -> list[Path]:
    return sorted((EVALS / sub).rglob("*.py"))


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_reader_sees_function_level_and_relative_imports() -> None:
    """The checks below can fail: the reader finds the imports they look for."""
    assert "sleuth.evals.rag.runner" in imports_of(EVALS / "report" / "results.py")
    source = "def f():\n    from ..retrieval import runner\n    import argparse\n"
    found = imports_in(source, "sleuth.evals.report.results")
    assert {"sleuth.evals.retrieval.runner", "argparse"} <= found


def test_report_imports_nothing_of_retrieval() -> None:
    """The result documents sit below the runs: what they share with ``retrieval`` (the run
    record, the metric names) lives further down (``rag.runner``, ``sleuth.scoring.retrieval``)."""
    offenders = {
        f"{path.relative_to(EVALS)} imports {name}"
        for path in _files("report")
        for name in imports_of(path)
        if _within(name, "sleuth.evals.retrieval")
    }
    assert not offenders, sorted(offenders)


def _subpackage(name: str) -> str | None:
    parts = name.split(".")
    if parts[:2] != ["sleuth", "evals"] or len(parts) < 3:
        return None
    return parts[2]


def _package_graph() -> dict[str, set[str]]:
    """Subpackage (or top module) of sleuth.evals → those it imports (not itself)."""
    graph: dict[str, set[str]] = {}
    for path in _files():
        own = _subpackage(_module_name(path)[0])
        if own is None:
            continue
        targets = {_subpackage(n) for n in imports_of(path)}
        graph.setdefault(own, set()).update(t for t in targets if t and t != own)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (depth first), or None."""
    state: dict[str, int] = {}  # 1 on the path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_two_eval_subpackages_import_each_other() -> None:
    """Package level, function-level imports included: ``retrieval`` once held a command that
    imported ``report``, which imported ``retrieval`` back."""
    graph = _package_graph()
    assert {"report", "retrieval", "commands", "cli"} <= graph.keys()
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_commands_take_typed_options_not_a_namespace() -> None:
    offenders = [
        str(path.relative_to(EVALS))
        for path in _files("commands")
        if "argparse" in imports_of(path)
    ]
    assert not offenders


HEAVY = ("ragas", "pandas", "kubernetes")


def _loaded_after(code: str, watched: tuple[str, ...]) -> list[str]:
    """Which of ``watched`` a fresh interpreter has loaded after running ``code``."""
    probe = f"import sys\n{code}\nprint(','.join(m for m in {watched!r} if m in sys.modules))\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True
    )
    return [m for m in done.stdout.strip().split(",") if m]


def test_the_parsers_load_no_command() -> None:
    """``sleuth --help`` builds every parser: it must not load the commands (ragas, pandas, the
    Kubernetes client)."""
    code = "from sleuth.core.cli import build_parser\nbuild_parser()"
    assert _loaded_after(code, ("sleuth.evals.commands.dispatch", *HEAVY)) == []


def test_the_dataset_commands_load_no_scoring_stack() -> None:
    """build-golden and synth-corpus start without ragas; the scoring commands do load it (so
    the probe can tell)."""
    assert _loaded_after("import sleuth.evals.commands.golden", HEAVY) == []
    assert "ragas" in _loaded_after("import sleuth.evals.commands.dispatch", HEAVY)
