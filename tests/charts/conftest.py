"""Chart fixtures: the pinned helm binary."""

from __future__ import annotations

from pathlib import Path

import pytest
from chart_testkit import helm_binary


@pytest.fixture(scope="session")
def helm() -> Path:
    try:
        return helm_binary()
    except RuntimeError as err:
        pytest.fail(str(err), pytrace=False)
