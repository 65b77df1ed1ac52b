"""The eval pod's files: what it mounts (the golden set, the TSA cases, the agent token, where
reports go) and the paths its arguments name. Used by :mod:`.evalschedule`."""

from __future__ import annotations

from pathlib import PurePosixPath

from sleuth.core.api.v1alpha1.evalruns import ToolSelectionSpec
from sleuth.core.api.v1alpha1.evalschedule import DatasetSpec, EvalScheduleSpec
from sleuth.operator.render.access import agent_audience
from sleuth.operator.render.meta import Manifest, Owner

DATASET_DIR = "/var/lib/sleuth/dataset"
CASES_DIR = "/var/lib/sleuth/tsa"
RESULTS_DIR = "/var/lib/sleuth/results"
AGENT_TOKEN_DIR = "/var/run/secrets/sleuth/agent"
AGENT_TOKEN_VOLUME = "agent-token"
RUN_ID_ENV = "SLEUTH_EVAL_RUN_ID"  # what `sleuth eval` reads its --run-id default from
SHARD_ARG = "$(JOB_COMPLETION_INDEX)"  # expanded by the kubelet in Indexed Jobs' pods


Source = DatasetSpec | ToolSelectionSpec
"""A file the run reads: in a ConfigMap or on a claim (the model validator: exactly one)."""


def _source_volume(name: str, source: Source) -> Manifest:
    """The source's volume, read-only."""
    if source.config_map_ref is not None:
        return {"name": name, "configMap": {"name": source.config_map_ref.name}}
    assert source.persistent_volume_claim is not None
    return {
        "name": name,
        "persistentVolumeClaim": {
            "claimName": source.persistent_volume_claim.claim_name,
            "readOnly": True,
        },
    }


def _source_path(folder: str, source: Source) -> str:
    """Where the source's file is, inside the eval pod, when its volume is mounted at folder."""
    if source.config_map_ref is not None:
        return str(PurePosixPath(folder) / source.config_map_ref.key)
    assert source.persistent_volume_claim is not None
    return str(PurePosixPath(folder) / source.persistent_volume_claim.path)


def _cases(spec: EvalScheduleSpec) -> ToolSelectionSpec:
    assert spec.tool_selection is not None  # the spec's validator: TSA is scored only with them
    return spec.tool_selection


def golden_path(spec: EvalScheduleSpec) -> str:
    """Where the golden JSONL is, inside the eval pod."""
    return _source_path(DATASET_DIR, spec.dataset)


def cases_volume(spec: EvalScheduleSpec) -> Manifest:
    """The TSA cases, read-only: a ConfigMap or a claim."""
    return _source_volume("tsa-cases", _cases(spec))


def results_volume(spec: EvalScheduleSpec) -> Manifest:
    """Where the reports go: the pod's scratch space, or the claim of ``spec.reports``."""
    if spec.reports is None:
        return {"name": "results", "emptyDir": {}}
    return {"name": "results", "persistentVolumeClaim": {"claimName": spec.reports.claim_name}}


def dataset_volume(spec: EvalScheduleSpec) -> Manifest:
    """The golden set, read-only: a ConfigMap or a claim."""
    return _source_volume("dataset", spec.dataset)


def report_args(spec: EvalScheduleSpec, schedule: str, part: str) -> list[str]:
    """Where a container writes its report: ``<part>.json`` in the pod's scratch space, or, with
    ``spec.reports``, ``<part>.json`` and ``.html`` in the run's folder on the claim
    (``<schedule>/<job>/``, the Job's name expanded by the kubelet), the newest
    ``keepRuns`` folders kept. Each shard of a sharded run writes its own part."""
    if spec.parallelism > 1:
        part = f"{part}-{SHARD_ARG}"
    if spec.reports is None:
        return ["--out", f"{RESULTS_DIR}/{part}.json"]
    folder = f"{RESULTS_DIR}/{schedule}/$({RUN_ID_ENV})"
    return [
        "--out",
        f"{folder}/{part}.json",
        "--html",
        f"{folder}/{part}.html",
        "--keep-runs",
        str(spec.reports.keep_runs),
    ]


def tsa_cases_path(spec: EvalScheduleSpec) -> str:
    """Where the TSA cases are, inside the eval pod."""
    return _source_path(CASES_DIR, _cases(spec))


def agent_token_volume(owner: Owner, agent_name: str) -> Manifest:
    """The eval containers' credential towards the agent: a projected token of the Job's
    ServiceAccount whose audience is the agent (it admits this schedule's ServiceAccount,
    render/access.py); the kubelet rotates it."""
    agent = Owner("AgentDeployment", agent_name, owner.namespace, "")
    return {
        "name": AGENT_TOKEN_VOLUME,
        "projected": {
            "sources": [
                {
                    "serviceAccountToken": {
                        "path": "token",
                        "audience": agent_audience(agent),
                        "expirationSeconds": 3600,
                    }
                }
            ]
        },
    }


__all__ = [
    "AGENT_TOKEN_DIR",
    "AGENT_TOKEN_VOLUME",
    "CASES_DIR",
    "DATASET_DIR",
    "RESULTS_DIR",
    "RUN_ID_ENV",
    "SHARD_ARG",
    "agent_token_volume",
    "cases_volume",
    "dataset_volume",
    "golden_path",
    "report_args",
    "results_volume",
    "tsa_cases_path",
]
