"""Waiting for a condition in a test: a generous deadline, never a timing assertion."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def eventually(
    check: Callable[[], T],
    timeout: float = 90.0,
    what: str = "",
    *,
    interval: float = 0.5,
    not_yet: tuple[type[BaseException], ...] = (AssertionError,),
) -> T:
    """Call ``check`` every ``interval`` seconds until it returns a truthy value, and return it.

    An ``AssertionError`` (or another of ``not_yet``) raised by ``check`` counts as "not yet".
    After ``timeout`` seconds the test fails, naming ``what`` and the last result (or error).
    """
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except not_yet as err:
            last = err
        else:
            if last:
                return last
        time.sleep(interval)
    raise AssertionError(f"never happened within {timeout:.0f}s: {what} (last: {last!r})")
