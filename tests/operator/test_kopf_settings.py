"""What the operator tells kopf at start-up (sleuth.operator.handlers.configure)."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

import kopf
import pytest

from sleuth.operator.handlers import IDLE_WORKER_SECONDS, LIST_CHUNK, NoDiffBase, configure

pytestmark = pytest.mark.unit


def test_listings_come_in_pages_idle_object_workers_go_soon_and_no_diff_base_is_built() -> None:
    started: list[bool] = []
    memo = SimpleNamespace(controller=SimpleNamespace(start=lambda: started.append(True)))
    settings = kopf.OperatorSettings()
    assert settings.queueing.idle_timeout > IDLE_WORKER_SECONDS  # kopf's default keeps them 5 s
    asyncio.run(configure(settings=settings, memo=memo))
    assert settings.watching.chunk_size == LIST_CHUNK
    assert settings.queueing.idle_timeout == IDLE_WORKER_SECONDS
    assert settings.posting.level == logging.WARNING
    assert isinstance(settings.persistence.diffbase_storage, NoDiffBase)
    assert started == [True]  # the loop's workers and resync
