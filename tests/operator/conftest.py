"""Operator fixtures for the cluster tests: CRDs installed once, an operator process per test.

The operator runs as a host process (``sleuth operator``) against the test control plane, watching
only the test's namespace, exactly as in development. Its log is printed when a test fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.operator.operator_testkit import OperatorProcess
from tests.support.paths import ROOT


@pytest.fixture(scope="session")
def crds(kube: Any) -> None:
    """The generated CRDs, installed into the test control plane."""
    kube.kubectl("apply", "--server-side", "-f", str(ROOT / "crds"))
    kube.kubectl(
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/agentdeployments.sleuth.dev",
        "crd/toolbindings.sleuth.dev",
    )


@pytest.fixture
def operator(
    kube: Any, namespace: str, crds: None, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[OperatorProcess]:
    """A running operator watching the test's namespace."""
    proc = OperatorProcess(kube.kubeconfig, namespace, tmp_path / "operator.log")
    proc.start()
    yield proc
    proc.stop()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        print(f"--- operator log ---\n{proc.text()[-8000:]}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
