"""The suite's split over pytest-xdist workers (tests/support/workers.py), on a suite of its own.

A temporary folder holds a conftest with the same collection hook as tests/conftest.py and tests
that record which worker ran them; pytest runs it with two workers, as ``tests/run.py`` runs the
suite (with four).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytestmark = [pytest.mark.integration]

CONFTEST = """
import os
from pathlib import Path

import pytest

from tests.support.workers import mark_groups, order_for_workers, scattered_real_node_tests


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config, items):
    mark_groups(items)
    yield
    order_for_workers(config, items)


@pytest.fixture(scope="session")
def real_node(request):
    scattered = scattered_real_node_tests(request.session)
    if scattered:
        pytest.fail(f"not grouped: {scattered}", pytrace=False)
    return "node"


@pytest.fixture(scope="module")
def served():
    return "model"


@pytest.fixture(autouse=True)
def record(request):
    yield
    with Path(os.environ["RECORD"]).open("a") as f:
        f.write(f"{request.node.name} {os.environ['PYTEST_XDIST_WORKER']}\\n")
"""

NODE_TESTS = """
import time

def test_node_a(real_node):
    time.sleep(0.3)

def test_node_b(real_node):
    time.sleep(0.3)
"""

E2E_TESTS = """
import pytest

@pytest.mark.realnode
def test_e2e_marked():
    pass
"""

SERVED_TESTS = """
import time

def test_served_a(served):
    time.sleep(0.3)

def test_served_b(served):
    time.sleep(0.3)

def test_served_c(served):
    time.sleep(0.3)
"""

SINGLE_TESTS = "\n".join(
    f"def test_single_{i}():\n    __import__('time').sleep(0.2)\n" for i in range(8)
)


def _suite(folder: Path) -> None:
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "test_node_x.py").write_text(NODE_TESTS)
    (folder / "test_e2e_x.py").write_text(E2E_TESTS)
    (folder / "test_served_x.py").write_text(SERVED_TESTS)
    (folder / "test_single_x.py").write_text(SINGLE_TESTS)
    (folder / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    realnode: the real node\n"
        "addopts = -p no:cacheprovider --dist loadgroup --no-loadscope-reorder\n"
    )


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RECORD": str(folder / "record.txt")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_groups_stay_on_one_worker_and_singles_spread(tmp_path: Path) -> None:
    _suite(tmp_path)
    proc = _pytest(tmp_path, "-v")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ran = dict(line.split() for line in (tmp_path / "record.txt").read_text().splitlines())
    assert len(ran) == 14, ran
    # the real-node fixture's users and the realnode marker: one worker
    assert len({ran["test_node_a"], ran["test_node_b"], ran["test_e2e_marked"]}) == 1, ran
    # a module-scoped fixture's module: one worker
    assert len({ran["test_served_a"], ran["test_served_b"], ran["test_served_c"]}) == 1, ran
    # the rest go to whichever worker is free: both take some
    assert len({ran[f"test_single_{i}"] for i in range(8)}) == 2, ran
    # the groups carry their names into the node ids, as the scheduler reads them
    assert "test_node_x.py::test_node_a@real-node" in proc.stdout
    assert "test_served_x.py::test_served_a@test_served_x" in proc.stdout


def test_real_node_tests_without_loadgroup_are_refused(tmp_path: Path) -> None:
    """Without the groups (here --dist load) the real node's fixture fails at once, naming them,
    instead of waiting on the machine's lock for another worker's whole session."""
    _suite(tmp_path)
    proc = _pytest(tmp_path, "--dist", "load")
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    named = "not grouped: ['test_e2e_x.py::test_e2e_marked', 'test_node_x.py::test_node_a'"
    assert named in proc.stdout, proc.stdout[-3000:]
    # the two tests that use the fixture fail at its set-up; the others ran
    assert "12 passed, 2 errors" in proc.stdout, proc.stdout[-3000:]
