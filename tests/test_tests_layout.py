"""The tests' own layout (docs/testing.md): folders mirror the packages, helpers are imported by
their package path, and no test folder can shadow the standard library."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.unit

TESTS = ROOT / "tests"
# Test folders that are not a sleuth package: the chart, the control plane and the real node,
# the end-to-end tests, and the helpers shared by more than one folder.
OTHER_FOLDERS = {"charts", "cluster", "e2e", "support"}
# Their modules still import one another by bare name (tests/cluster's are scripts too); until
# they are converted, bare imports in them, or of their modules, are not counted here.
BARE_NAMES_PENDING = {"cluster", "e2e"}


def _components() -> set[str]:
    """The sleuth packages, read from disk: ``<dist>/src/sleuth/<component>/`` and the root's."""
    trees = [*ROOT.glob("*/src/sleuth"), ROOT / "src" / "sleuth"]
    return {p.name for tree in trees for p in tree.iterdir() if (p / "__init__.py").is_file()}


def _modules() -> dict[str, Path]:
    """Bare name → file of every module under tests/ (what a bare import of that name loads)."""
    return {
        p.stem: p
        for p in TESTS.rglob("*.py")
        if p.name != "__init__.py" and "__pycache__" not in p.parts
    }


def bare_imports(path: Path, modules: dict[str, Path]) -> list[tuple[int, str]]:
    """``(line, module)`` for each import in ``path`` of a test module by its bare name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            target = modules.get(top)
            if target is None or top in sys.stdlib_module_names:
                continue
            if target.relative_to(TESTS).parts[0] in BARE_NAMES_PENDING:
                continue
            found.append((node.lineno, name))
    return found


def test_test_folders_mirror_the_packages() -> None:
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    components = _components()
    assert folders - components - OTHER_FOLDERS == set(), "a test folder that mirrors nothing"
    assert components - folders == set(), "a sleuth package without its test folder"


def test_helpers_are_imported_by_their_package_path() -> None:
    modules = _modules()
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sorted(modules.values())
        if path.relative_to(TESTS).parts[0] not in BARE_NAMES_PENDING
        for line, name in bare_imports(path, modules)
    ]
    assert not wrong, (
        "import test helpers by their package path (`from tests.operator.operator_testkit "
        "import ...`, `from tests.support.polling import eventually`):\n" + "\n".join(wrong)
    )


def test_the_checker_sees_a_bare_helper_import(tmp_path: Path) -> None:
    """The checker itself: a bare import, even inside a function, is caught; the package path
    and the standard library are not."""
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "import json\n"
        "from tests.operator.operator_testkit import OperatorProcess\n"
        "def f():\n"
        "    from operator_testkit import OperatorProcess\n"
    )
    assert bare_imports(probe, _modules()) == [(4, "operator_testkit")]


def test_no_test_folder_shadows_the_standard_library() -> None:
    """``python tests/run.py`` puts tests/ first on sys.path; ``tests/operator`` has no
    ``__init__.py``, so it is at most a namespace portion and the standard library wins."""
    packages = [p.parent.name for p in TESTS.glob("*/__init__.py")]
    assert [p for p in packages if p in sys.stdlib_module_names] == []
    proc = subprocess.run(
        [sys.executable, "-S", "-c", "import operator; operator.itemgetter; print(operator)"],
        cwd=TESTS,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "built-in" in proc.stdout or "/lib/python" in proc.stdout, proc.stdout
