"""How a command ends: its exit code, bad input reported in one line (and, for a scheduled run,
as a Failed part of its EvalSchedule's status: :mod:`sleuth.evals.commands.reporting`).

Exit codes: 0 every threshold met; 1 a threshold missed or more failed rows than allowed;
2 invalid input (dataset, split guard, manifest, arguments); 3 the results could not be written
to the EvalSchedule named by ``--status`` (only when the eval itself would have exited 0).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Protocol

from sleuth.core.errors import SleuthError

EXIT_OK, EXIT_GATE, EXIT_INPUT, EXIT_STATUS = 0, 1, 2, 3


class PartReport(Protocol):
    """A scheduled run's part in its EvalSchedule's status; the one implementation is
    :class:`sleuth.evals.commands.reporting.StatusReport`, above this module."""

    def prepare(self) -> int | None: ...

    def publish(
        self, code: int, *, doc: dict[str, Any] | None = None, error: str | None = None
    ) -> int: ...


def guarded(run: Callable[[], int], report: PartReport | None = None) -> int:
    """Run a command: bad input → exit 2 with one line; with ``--status`` the run still reports a
    Failed part."""
    refused = report.prepare() if report is not None else None
    if refused is not None:
        return refused
    try:
        return run()
    except (SleuthError, ValueError, OSError) as exc:
        print(f"sleuth eval: error: {exc}", file=sys.stderr)
        return publish(report, EXIT_INPUT, error=str(exc))
    except Exception as exc:
        publish(report, EXIT_INPUT, error=f"unexpected {type(exc).__name__}: {exc}")
        raise


def publish(report: PartReport | None, code: int, **part: Any) -> int:
    """``report.publish`` (the code as it is without a report)."""
    return code if report is None else report.publish(code, **part)
