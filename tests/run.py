"""Run the test suite; ``make test`` calls this after set-up.

pytest runs on ``WORKERS`` pytest-xdist workers and reports the slowest tests (docs/testing.md,
"Parallel workers"); arguments given here come after those defaults and win, so
``make test PYTEST_ARGS="-n 0"`` runs everything in this one process.

pytest exits 5 when it collected no test. That must never pass for a green run, so it is turned
into a loud failure here; every other exit code is passed through unchanged.
"""

from __future__ import annotations

import sys

import pytest

# Most of the suite waits (processes and control planes starting, operators converging), so on
# a 2-core machine four workers overlap the waits without starving the CPU-bound tests.
WORKERS = 4
DEFAULTS = ["-n", str(WORKERS), "--durations=25"]


def main(argv: list[str]) -> int:
    code = int(pytest.main([*DEFAULTS, *argv]))
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        print(
            "tests/run.py: pytest collected no tests — treating that as a failure", file=sys.stderr
        )
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
