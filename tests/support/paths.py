"""The repository's folders, and the ``sleuth`` command installed in this virtual environment."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "contracts"
CRDS = ROOT / "crds"
# `sleuth` of the interpreter running the tests (the editable install in .venv).
SLEUTH = Path(sys.executable).parent / "sleuth"
