"""An embedded PostgreSQL (pgserver) that starts on a busy machine too.

pgserver runs ``pg_ctl -w start`` with a fixed 10 s timeout. On a loaded machine the wait can pass
10 s while the server itself came up (its log says "ready to accept connections"): pg_ctl is
killed, the postmaster keeps running, and pgserver raises. Asking again finds the running server
(its ``postmaster.pid``) and adopts it, so a timed-out start is asked again, a bounded number of
times, before the error is raised.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Literal

START_ATTEMPTS = 4


def embedded_postgres(data: Path, cleanup_mode: Literal["stop", "delete"] | None = "delete") -> Any:
    """pgserver's server for ``data`` (a context manager), its start asked again on a timeout."""
    import pgserver  # heavy: only the demo, the tools' tests and benchmarks need it

    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            return pgserver.get_server(data, cleanup_mode=cleanup_mode)  # type: ignore[attr-defined]
        except subprocess.TimeoutExpired:
            if attempt == START_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


__all__ = ["START_ATTEMPTS", "embedded_postgres"]
