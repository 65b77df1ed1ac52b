"""Fixtures for the agent's tests: the scripted model server in a thread."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sleuth.scripted import ScriptedServer


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server
