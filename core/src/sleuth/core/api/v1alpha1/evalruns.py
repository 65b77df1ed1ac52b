"""What an EvalSchedule's run reads besides the golden set, and where it leaves its reports.

``spec.toolSelection``: the team's own tool selection cases (TSA JSONL, docs/evals.md), in a
ConfigMap or on a PersistentVolumeClaim like the golden set. Scored with the agent's own first
step — its system prompt, its tools and their descriptions, its model client's options, read
from the running agent — so AgentToolSelectionAccuracyLow measures the team's agent.

``spec.reports``: a PersistentVolumeClaim the runs write their JSON and HTML reports to, one
folder per run, the newest ``keepRuns`` kept; readable after the pods are gone.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from sleuth.core.api.v1alpha1.common import (
    DataKey,
    ObjectName,
    SpecModel,
    VolumePath,
    exactly_one_message,
    exactly_one_rule,
)

Split = Literal["dev", "test", "all"]
# The two places a run's input may come from; a spec sets exactly one.
SOURCES = ("configMapRef", "persistentVolumeClaim")


class CasesConfigMap(SpecModel):
    """TSA cases in a ConfigMap."""

    name: ObjectName = Field(description="Name of the ConfigMap.")
    key: DataKey = Field(
        description="Key holding the TSA cases, one JSON object a line (docs/evals.md)."
    )


class CasesClaim(SpecModel):
    """TSA cases on a PersistentVolumeClaim, mounted read-only."""

    claim_name: ObjectName = Field(description="Name of the PersistentVolumeClaim.")
    path: VolumePath = Field(
        description="Path of the TSA cases JSONL inside the claim (relative, no '..')."
    )


class ToolSelectionSpec(SpecModel):
    """The team's tool selection cases, scored with the agent's own prompt and tools."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [exactly_one_rule("spec.toolSelection", *SOURCES)]
        }
    )

    config_map_ref: CasesConfigMap | None = Field(
        default=None, description="ConfigMap holding the TSA cases JSONL."
    )
    persistent_volume_claim: CasesClaim | None = Field(
        default=None, description="PersistentVolumeClaim holding the TSA cases JSONL."
    )
    split: Split = Field(
        default="test",
        description="Split of the cases that is scored (default test).",
    )

    @model_validator(mode="after")
    def _one_source(self) -> ToolSelectionSpec:
        if (self.config_map_ref is None) == (self.persistent_volume_claim is None):
            raise ValueError(exactly_one_message("spec.toolSelection", *SOURCES))
        return self


class ReportsSpec(SpecModel):
    """Where the runs keep their JSON and HTML reports."""

    claim_name: ObjectName = Field(
        description="PersistentVolumeClaim (same namespace) the runs write to: "
        "<schedule>/<job>/<part>.json and .html, one folder per run. With spec.parallelism "
        "above 1 the pods may run on different nodes: a ReadWriteMany claim.",
    )
    keep_runs: int = Field(
        default=10,
        ge=1,
        le=1000,
        description="Run folders kept; each run removes the oldest beyond this (default 10).",
    )


__all__ = [
    "SOURCES",
    "CasesClaim",
    "CasesConfigMap",
    "ReportsSpec",
    "Split",
    "ToolSelectionSpec",
]
