"""One distribution, ``sleuth``, whose top-level folders are subpackages — proven both ways."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIRS = {
    "sleuth": "sleuth",
    "sleuth.agent": "agent",
    "sleuth.operator": "operator",
    "sleuth.evals": "evals",
}

IMPORT_CHECK = (
    "import operator, sleuth, sleuth.agent, sleuth.operator, sleuth.evals;"
    "assert operator.itemgetter(1)([0, 7]) == 7, 'stdlib operator shadowed';"
    "assert sleuth.operator.__name__ == 'sleuth.operator';"
    "print(sleuth.__version__, sleuth.operator.__file__)"
)


def _packages_on_disk() -> set[str]:
    found = set()
    for name, folder in PACKAGE_DIRS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    return found


@pytest.mark.unit
def test_every_package_folder_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    missing = _packages_on_disk() - listed
    assert not missing, (
        f"add these to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"
    )
    stale = listed - _packages_on_disk()
    assert not stale, f"listed in pyproject.toml but no such package folder: {sorted(stale)}"


@pytest.mark.unit
def test_editable_install_maps_folders_and_keeps_stdlib_operator() -> None:
    out = subprocess.run(
        [sys.executable, "-c", IMPORT_CHECK], capture_output=True, text=True, cwd="/", check=True
    ).stdout
    version, path = out.split()
    assert version != "0.0.0"
    assert Path(path).resolve() == ROOT / "operator" / "__init__.py"


@pytest.mark.slow
@pytest.mark.integration
def test_built_wheel_imports_all_subpackages(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path / "dist"), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("sleuth-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "sleuth/operator/__init__.py" in names
    assert not any(n.startswith(("operator/", "agent/", "evals/")) for n in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    scripts = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "sleuth = sleuth.cli:main" in scripts

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
    )
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", IMPORT_CHECK],
        capture_output=True,
        text=True,
        cwd="/",
        check=True,
    ).stdout
    assert "site-packages/sleuth/operator/__init__.py" in out


@pytest.mark.unit
def test_cli_lists_subcommands_and_version() -> None:
    sleuth = Path(sys.executable).parent / "sleuth"
    out = subprocess.run([str(sleuth), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("sleuth ")
    helptext = subprocess.run([str(sleuth), "--help"], capture_output=True, text=True, check=True)
    assert "usage: sleuth" in helptext.stdout
