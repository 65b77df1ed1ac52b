"""A dataset ConfigMap for EvalSchedules in cluster tests: the operator reports an EvalSchedule
whose dataset ConfigMap or key is missing as DatasetNotFound, so tests that expect it scheduled
apply this first (name ``golden``, keys ``golden.jsonl`` and its manifest; no run reads it)."""

from __future__ import annotations

import json
from typing import Any

GOLDEN_NAME = "golden"
GOLDEN_KEY = "golden.jsonl"


def golden_configmap(name: str = GOLDEN_NAME, key: str = GOLDEN_KEY) -> dict[str, Any]:
    row = {"id": "q1", "question": "Which contracts renew in 2025?", "split": "test"}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {key: json.dumps(row) + "\n", f"{key}.manifest.json": json.dumps({"rows": 1})},
    }
