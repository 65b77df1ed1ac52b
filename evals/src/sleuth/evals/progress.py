"""A dependency-free progress bar on stderr for long runs (quiet when disabled)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """``advance()`` once per finished item; redraws at most ten times a second."""

    def __init__(
        self, total: int, label: str, *, enabled: bool = True, stream: TextIO | None = None
    ) -> None:
        self.total = total
        self.label = label
        self.done = 0
        self.failed = 0
        self.enabled = enabled and total > 0
        self.stream = stream or sys.stderr
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last = 0.0
        self._start = time.monotonic()

    def advance(self, *, failed: bool = False) -> None:
        self.done += 1
        self.failed += int(failed)
        now = time.monotonic()
        if self.done == self.total or now - self._last >= (0.1 if self._tty else 5.0):
            self._last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        if not self.enabled:
            return
        width = 30
        filled = int(width * self.done / self.total)
        bar = "#" * filled + "-" * (width - filled)
        line = (
            f"{self.label} [{bar}] {self.done}/{self.total}"
            f" failed={self.failed} {now - self._start:.1f}s"
        )
        end = "\n" if (self.done == self.total or not self._tty) else ""
        self.stream.write(("\r" if self._tty else "") + line + end)
        self.stream.flush()
