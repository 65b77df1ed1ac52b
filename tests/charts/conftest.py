"""Chart fixtures: the pinned helm binary, and extra namespaces for the cluster tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.charts.chart_testkit import helm_binary


@pytest.fixture(scope="session")
def helm() -> Path:
    try:
        return helm_binary()
    except RuntimeError as err:
        pytest.fail(str(err), pytrace=False)


def _new_namespace(kube: Any) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:8]}"
    kube.kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        kube.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def other_namespace(kube: Any) -> Iterator[str]:
    yield from _new_namespace(kube)


@pytest.fixture
def third_namespace(kube: Any) -> Iterator[str]:
    yield from _new_namespace(kube)
