"""A pgserver start whose wait timed out is asked again (sleuth.demo.postgres), a bounded number
of times."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from sleuth.demo.postgres import START_ATTEMPTS, embedded_postgres


def _flaky(fail: int, calls: list[Path]) -> Any:
    def get_server(data: Path, cleanup_mode: str | None = None) -> str:
        calls.append(data)
        if len(calls) <= fail:
            raise subprocess.TimeoutExpired(["pg_ctl", "start"], 10)
        return f"server at {data} ({cleanup_mode})"

    return get_server


def test_a_timed_out_start_is_asked_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import pgserver

    calls: list[Path] = []
    monkeypatch.setattr(pgserver, "get_server", _flaky(START_ATTEMPTS - 1, calls))
    assert embedded_postgres(tmp_path, cleanup_mode="stop") == f"server at {tmp_path} (stop)"
    assert calls == [tmp_path] * START_ATTEMPTS


def test_the_last_timeout_is_raised(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import pgserver

    calls: list[Path] = []
    monkeypatch.setattr(pgserver, "get_server", _flaky(START_ATTEMPTS, calls))
    with pytest.raises(subprocess.TimeoutExpired):
        embedded_postgres(tmp_path)
    assert len(calls) == START_ATTEMPTS
