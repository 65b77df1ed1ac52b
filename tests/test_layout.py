"""The workspace layout (docs/layout.md), proven: folders are import paths, floors hold.

Each component is a distribution with its own pyproject.toml and ``src/sleuth/<component>/``;
they share the ``sleuth`` namespace. A module may import only its own package and the sleuth
distributions its pyproject.toml depends on — function-level and ``TYPE_CHECKING`` imports
included — so an import that runs back up a floor fails here, and so does a dependency that a
deployable would not install.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import distribution
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# folder → (distribution, package it provides)
COMPONENTS = {
    "core": ("sleuth-core", "sleuth.core"),
    "scoring": ("sleuth-scoring", "sleuth.scoring"),
    "scripted": ("sleuth-scripted", "sleuth.scripted"),
    "operator": ("sleuth-operator", "sleuth.operator"),
    "tools": ("sleuth-tools", "sleuth.tools"),
    "agent": ("sleuth-agent", "sleuth.agent"),
    "evals": ("sleuth-evals", "sleuth.evals"),
    ".": ("sleuth", "sleuth.demo"),
}
PACKAGE_OF = {dist: package for dist, package in COMPONENTS.values()}
# What the eval and online-scoring stack pulls in; the operator and the tool services must install
# none of it.
SCORING_STACK = {"ragas", "langchain-core", "langchain-community", "pandas", "pyarrow"}


def _pyproject(folder: str) -> dict:  # type: ignore[type-arg]
    return tomllib.loads((ROOT / folder / "pyproject.toml").read_text())


def _sleuth_requirements(folder: str) -> set[str]:
    names = set()
    for req in _pyproject(folder)["project"].get("dependencies", []):
        name = re.split(r"[\s\[<>=!;~]", req, maxsplit=1)[0].lower()
        if name.startswith("sleuth"):
            names.add(name)
    return names


def _allowed_packages(folder: str) -> set[str]:
    """Own package plus those of the declared sleuth dependencies, transitively."""
    allowed, todo = set(), [COMPONENTS[folder][0]]
    folder_of = {dist: f for f, (dist, _) in COMPONENTS.items()}
    while todo:
        dist = todo.pop()
        if PACKAGE_OF[dist] in allowed:
            continue
        allowed.add(PACKAGE_OF[dist])
        todo.extend(_sleuth_requirements(folder_of[dist]))
    return allowed


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
    return found


def _sources(folder: str) -> list[Path]:
    return sorted((ROOT / folder / "src" / "sleuth").rglob("*.py"))


@pytest.mark.unit
@pytest.mark.parametrize("folder", sorted(COMPONENTS))
def test_imports_run_one_way(folder: str) -> None:
    allowed = _allowed_packages(folder)
    wrong = []
    for path in _sources(folder):
        for line, module in _imports(path):
            if not module.startswith("sleuth.") and module != "sleuth":
                continue
            package = ".".join(module.split(".")[:2])
            if package not in allowed:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: imports {module}")
    assert not wrong, (
        f"{folder}/ may import only {sorted(allowed)} (its pyproject.toml's sleuth "
        "dependencies); these run the other way:\n" + "\n".join(wrong)
    )


@pytest.mark.unit
def test_the_floor_test_sees_an_import_that_runs_back_up(tmp_path: Path) -> None:
    """The checker itself: an operator module importing the agent is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from sleuth.agent.loop import run\n")
    modules = [m for _, m in _imports(bad)]
    assert modules == ["sleuth.agent.loop"]
    assert "sleuth.agent" not in _allowed_packages("operator")
    assert "sleuth.agent" in _allowed_packages("evals")
    assert _allowed_packages("tools") == {"sleuth.tools", "sleuth.core"}
    assert "sleuth.tools" in _allowed_packages("agent")


@pytest.mark.unit
def test_folders_are_import_paths_without_links_or_init_in_the_namespace() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    links = [line.split("\t")[1] for line in tracked if line.startswith("120000")]
    assert links == [], f"symlinks fool the tools: {links}"
    for folder, (_, package) in COMPONENTS.items():
        ns = ROOT / folder / "src" / "sleuth"
        assert not (ns / "__init__.py").exists(), f"{ns}: `sleuth` is a namespace package"
        assert (ROOT / folder / "src" / Path(*package.split("."))).is_dir()
    # No package folder outside the src/ trees (tests, bench and tools are not packages).
    stray = [
        p.relative_to(ROOT)
        for p in ROOT.glob("*/__init__.py")
        if p.parent.name not in {"tests", "bench"}
    ]
    assert stray == []


@pytest.mark.unit
def test_nothing_in_the_repository_root_shadows_the_standard_library() -> None:
    """``python -S`` from the root: sys.path[0] is the root, and no site hook runs."""
    proc = subprocess.run(
        [sys.executable, "-S", "-c", "import operator; operator.itemgetter; print(operator)"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "built-in" in proc.stdout or "/lib/python" in proc.stdout, proc.stdout


@pytest.mark.unit
def test_each_package_is_loaded_from_its_folder() -> None:
    code = (
        "import importlib, operator; operator.itemgetter;"
        "[print(importlib.import_module(p).__file__) for p in "
        f"{sorted(p for _, p in COMPONENTS.values())!r}]"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd="/", capture_output=True, text=True, check=True
    ).stdout.split()
    expected = sorted(p for _, p in COMPONENTS.values())
    folder_of = {p: f for f, (_, p) in COMPONENTS.items()}
    for package, file in zip(expected, out, strict=True):
        want = ROOT / folder_of[package] / "src" / Path(*package.split(".")) / "__init__.py"
        assert Path(file).resolve() == want.resolve()


def _closure(dist: str, extras: tuple[str, ...] = ()) -> set[str]:
    """Installed distributions ``dist`` needs (its requirements, transitively, with markers)."""
    seen: set[str] = set()
    todo: list[tuple[str, tuple[str, ...]]] = [(dist, extras)]
    while todo:
        name, want = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen and not want:
            continue
        seen.add(key)
        from packaging.requirements import Requirement

        for text in distribution(name).requires or []:
            req = Requirement(text)
            env = [{"extra": e} for e in want] or [{"extra": ""}]
            if req.marker is not None and not any(req.marker.evaluate(e) for e in env):
                continue
            todo.append((req.name, tuple(sorted(req.extras))))
    return seen


@pytest.mark.unit
def test_the_operator_installs_no_scoring_stack() -> None:
    operator = _closure("sleuth-operator")
    assert "kopf" in operator
    assert "sleuth-core" in operator
    assert not operator & SCORING_STACK, sorted(operator & SCORING_STACK)
    assert not {"sleuth-agent", "sleuth-evals", "sleuth-scoring"} & operator
    # ... while the eval job really needs it, so the check above can fail.
    assert SCORING_STACK - {"pandas", "pyarrow"} <= _closure("sleuth-evals")


@pytest.mark.unit
def test_the_tools_install_no_scoring_stack() -> None:
    """A tool service's image carries the tools, not the judge: sleuth-tools needs core only."""
    tools = _closure("sleuth-tools")
    assert {"sleuth-core", "qdrant-client", "asyncpg", "mcp", "uvicorn"} <= tools
    assert not tools & SCORING_STACK, sorted(tools & SCORING_STACK)
    assert not {"sleuth-agent", "sleuth-evals", "sleuth-scoring", "sleuth-operator"} & tools
    assert _sleuth_requirements("tools") == {"sleuth-core"}
    # ... while the agent, which scores online, does install it: the check above can fail.
    assert {"ragas", "sleuth-tools"} <= _closure("sleuth-agent")


@pytest.mark.unit
def test_cli_offers_the_commands_of_what_is_installed() -> None:
    sleuth = Path(sys.executable).parent / "sleuth"
    out = subprocess.run([str(sleuth), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("sleuth ")
    helptext = subprocess.run([str(sleuth), "--help"], capture_output=True, text=True, check=True)
    for command in (
        "operator",
        "agent",
        "tool-service",
        "ingest",
        "sql",
        "eval",
        "demo",
        "crds",
        "scripted-model",
    ):
        assert command in helptext.stdout


@pytest.mark.slow
@pytest.mark.integration
def test_each_wheel_holds_only_its_own_package(tmp_path: Path) -> None:
    for folder, (dist, package) in COMPONENTS.items():
        out = tmp_path / folder.replace(".", "root")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "-q",
                "-w",
                str(out),
                str(ROOT / folder),
            ],
            check=True,
            capture_output=True,
        )
        (wheel,) = out.glob("*.whl")
        names = zipfile.ZipFile(wheel).namelist()
        code = [n for n in names if n.endswith(".py")]
        prefix = package.replace(".", "/") + "/"
        assert code, dist
        assert all(n.startswith(prefix) for n in code), (dist, code[:5])
        assert "sleuth/__init__.py" not in names
