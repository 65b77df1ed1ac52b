"""The operator's two rooms (docs/layout.md): the control loop (``sleuth.operator.loop``) imports
nothing of what sleuth reconciles; the domain (reconcilers, renderers, status, handlers) may use
the loop. Function-level, ``TYPE_CHECKING`` and relative imports count, as in tests/test_layout.py.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.unit

PACKAGE = "sleuth.operator"
LOOP = "sleuth.operator.loop"
SRC = ROOT / "operator" / "src"


def module_of(path: Path, src: Path = SRC) -> str:
    parts = path.relative_to(src).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, src: Path = SRC) -> list[tuple[int, str]]:
    """``(line, module)`` of every import in ``path`` (below ``src``), relative ones resolved."""
    here = module_of(path, src).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.append((node.lineno, module))
            if not node.module:  # `from . import x`: x is a module of that package
                found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def in_domain(module: str) -> bool:
    """A module of sleuth.operator outside the loop."""
    inside = module == PACKAGE or module.startswith(PACKAGE + ".")
    return inside and not (module == LOOP or module.startswith(LOOP + "."))


def domain_imports(path: Path, src: Path = SRC) -> list[str]:
    return [
        f"{path.relative_to(src)}:{line}: imports {module}"
        for line, module in imported(path, src)
        if in_domain(module)
    ]


def test_the_loop_imports_nothing_of_the_domain() -> None:
    loop = sorted((SRC / Path(*LOOP.split("."))).rglob("*.py"))
    assert len(loop) >= 8, loop  # the checker reads the real package
    wrong = [line for path in loop for line in domain_imports(path)]
    assert not wrong, (
        f"{LOOP} may import only itself, sleuth.core and third parties; the domain uses the "
        "loop, never the other way:\n" + "\n".join(wrong)
    )


def test_the_checker_sees_an_import_into_the_domain(tmp_path: Path) -> None:
    """Absolute, function-level and relative imports of a domain module are all caught."""
    loop = tmp_path / "operator" / "src" / "sleuth" / "operator" / "loop"
    loop.mkdir(parents=True)
    bad = loop / "bad.py"
    bad.write_text(
        "from sleuth.operator.loop.workqueue import WorkQueue\n"
        "from sleuth.operator.status import Cond\n"
        "def f():\n    from ..render import meta\n"
        "from .. import handlers\n"
    )
    src = tmp_path / "operator" / "src"
    wrong = [m for _, m in imported(bad, src) if in_domain(m)]
    assert set(wrong) == {
        "sleuth.operator",  # `from .. import handlers` reads the package: also not the loop's
        "sleuth.operator.handlers",
        "sleuth.operator.render",
        "sleuth.operator.status",
    }


def test_importing_the_whole_loop_loads_no_domain_module() -> None:
    """At run time too: the loop's modules import, and pull in nothing from the other room."""
    loop = SRC / Path(*LOOP.split("."))
    names = sorted(module_of(p) for p in loop.rglob("*.py"))
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('sleuth.operator'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/"
    ).stdout.split()
    assert set(names) <= set(out)
    assert [m for m in out if m != PACKAGE and in_domain(m)] == []
