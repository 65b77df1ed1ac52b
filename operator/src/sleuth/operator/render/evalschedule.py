"""An EvalSchedule's CronJob: ``sleuth eval ragas`` (and ``sleuth eval tsa``) on a schedule.

The ``ragas`` container asks the agent's own Service (``POST /v1/query``) every golden question of
the split and scores the answers with the judge; the ``tsa`` container (when
``toolSelectionAccuracy`` is among the metrics) sends the team's cases (``spec.toolSelection``,
mounted at :data:`CASES_DIR`) to the agent's model with the agent's own first step — system
prompt, tools, descriptions, model client options — read from the agent
(``GET /v1/eval/first-step``, :mod:`sleuth.agent.firststep`). Both prove who they are to the
agent with the same projected token. The golden dataset is mounted read-only at
:data:`DATASET_DIR`; results are written as JSON under :data:`RESULTS_DIR`: the pod's scratch
space, or with ``spec.reports`` a claim holding one folder per run (:func:`report_args`).
``spec.requestTimeoutSeconds`` bounds each request (``--timeout``). The judge defaults to the
agent's model server and model; answer relevancy's embeddings default to the agent's retrieval
embeddings endpoint (that of its oldest vector_search ToolBinding naming one,
:attr:`EvalTarget.embeddings`), else the local all-MiniLM-L6-v2 the image carries (as the tool
service embeds without an endpoint).

When the agent traces (its effective tracing settings, :mod:`.tracing`), so does the ``ragas``
container, as service ``sleuth-eval-<schedule>`` and recording every question (a sampling ratio
of 1: a run asks few): each golden question is a trace of its own that the agent's request joins,
with the scores on it (:mod:`sleuth.evals.tracing`).

Every container reports its part of the run to the EvalSchedule's status (environment
:data:`STATUS_ENV`, :data:`RUN_ID_ENV` = the Job's name, :data:`EXPECT_PARTS_ENV` = containers x
pods), as the ServiceAccount ``<schedule>-eval`` (see :mod:`.evalaccess`). With
``spec.parallelism`` N > 1 a run is an Indexed Job of N pods, pod K scoring shard K/N.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from sleuth.core.api.v1alpha1.common import SecretKeyRef
from sleuth.core.api.v1alpha1.evalschedule import RAGAS_METRICS, TSA_METRIC, EvalScheduleSpec
from sleuth.core.api.v1alpha1.tracing import TracingSpec
from sleuth.operator.render.agent import agent_name
from sleuth.operator.render.evalaccess import eval_account_name
from sleuth.operator.render.evalpod import (
    AGENT_TOKEN_DIR,
    AGENT_TOKEN_VOLUME,
    CASES_DIR,
    DATASET_DIR,
    RESULTS_DIR,
    RUN_ID_ENV,
    SHARD_ARG,
    agent_token_volume,
    cases_volume,
    dataset_volume,
    golden_path,
    report_args,
    results_volume,
    tsa_cases_path,
)
from sleuth.operator.render.meta import (
    Manifest,
    Owner,
    RenderSettings,
    hardened_container,
    hardened_pod,
    metadata,
    place_workload,
    resources,
    secret_env,
    service_url,
)
from sleuth.operator.render.tracing import effective_tracing, tracing_env

API_KEY_ENV = "SLEUTH_EVAL_API_KEY"  # what `sleuth eval` reads its --api-key default from
# What `sleuth eval` reads its --status, --run-id and --expect-parts defaults from.
STATUS_ENV = "SLEUTH_EVAL_STATUS"
EXPECT_PARTS_ENV = "SLEUTH_EVAL_EXPECT_PARTS"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"  # set on a Job's pods by the Job controller


@dataclass(frozen=True)
class EvalEmbeddings:
    """An OpenAI-compatible embeddings endpoint for answer relevancy."""

    endpoint: str  # base URL, including /v1 (one that needs no key: see retrieval_embedding)
    model: str


@dataclass(frozen=True)
class EvalTarget:
    """What the CronJob needs from the evaluated AgentDeployment (read from its status)."""

    agent: str  # name of the AgentDeployment
    model_endpoint: str  # its model server's base URL, including /v1
    model: str  # the model name the agent sends
    model_api_key: SecretKeyRef | None = None
    # The agent's retrieval embeddings (its vector_search ToolBinding's); None: the judge's.
    embeddings: EvalEmbeddings | None = None
    tracing: TracingSpec | None = None  # the agent's spec.agent.tracing


def cronjob_name(schedule: str) -> str:
    """Name of an EvalSchedule's CronJob."""
    return f"{schedule}-eval"


def agent_url(target: EvalTarget, namespace: str, settings: RenderSettings) -> str:
    """Base URL of the agent service (the eval appends /v1/query)."""
    owner = Owner("AgentDeployment", target.agent, namespace, "")
    return service_url(agent_name(owner), namespace, settings.agent_port)


def _common_args(
    spec: EvalScheduleSpec, target: EvalTarget, schedule: str, part: str, split: str
) -> list[str]:
    shard = ["--shard", f"{SHARD_ARG}/{spec.parallelism}"] if spec.parallelism > 1 else []
    args = [
        "--agent",
        target.agent,
        "--split",
        split,
        "--final-report",
        "--concurrency",
        str(spec.concurrency),
        "--timeout",
        str(spec.request_timeout_seconds),
        "--no-progress",
        *report_args(spec, schedule, part),
        *shard,
        # Both containers label their scores with the golden set's name (the TSA cases would
        # otherwise be labelled by their own file), so every part of a run agrees.
        "--dataset",
        dataset_label(spec),
    ]
    return args


def dataset_label(spec: EvalScheduleSpec) -> str:
    """The 'dataset' label of a run's scores: spec.dataset.name, else the golden file's stem."""
    return spec.dataset.name or PurePosixPath(golden_path(spec)).stem


def _embeddings_args(emb: EvalEmbeddings | None) -> list[str]:
    if emb is None:  # no retrieval endpoint: the local MiniLM the image carries, as retrieval does
        return ["--embeddings-url", "local"]
    return ["--embeddings-url", emb.endpoint, "--embeddings-model", emb.model]


def ragas_args(
    spec: EvalScheduleSpec, target: EvalTarget, owner: Owner, settings: RenderSettings
) -> list[str]:
    """Arguments of the ``ragas`` container (after the image's ``sleuth`` entrypoint)."""
    judge_url = spec.judge.endpoint if spec.judge else target.model_endpoint
    judge_model = spec.judge.model if spec.judge else target.model
    metrics = [RAGAS_METRICS[m] for m in spec.metrics if m in RAGAS_METRICS]
    t = spec.thresholds
    thresholds = {
        "faithfulness": t.faithfulness,
        "answer_relevancy": t.answer_relevancy,
        "context_precision_simple": t.context_precision,
        "context_recall": t.context_recall,
    }
    args = [
        "eval",
        "ragas",
        "--golden",
        golden_path(spec),
        "--agent-url",
        agent_url(target, owner.namespace, settings),
        "--agent-token-file",
        f"{AGENT_TOKEN_DIR}/token",
        "--judge-url",
        judge_url,
        "--judge-model",
        judge_model,
        *_embeddings_args(target.embeddings),
        "--metrics",
        ",".join(metrics),
        *_common_args(spec, target, owner.name, "ragas", spec.dataset.split),
    ]
    for name, value in thresholds.items():
        args += ["--threshold", f"{name}={value:g}"]
    return args


def tsa_args(
    spec: EvalScheduleSpec, target: EvalTarget, owner: Owner, settings: RenderSettings
) -> list[str]:
    """Arguments of the ``tsa`` container: the team's cases, sent to the agent's model with the
    agent's own first step (system prompt, tools, model client options) read from the agent."""
    assert spec.tool_selection is not None
    return [
        "eval",
        "tsa",
        "--cases",
        tsa_cases_path(spec),
        "--endpoint",
        target.model_endpoint,
        "--model",
        target.model,
        "--agent-url",
        agent_url(target, owner.namespace, settings),
        "--agent-token-file",
        f"{AGENT_TOKEN_DIR}/token",
        *_common_args(spec, target, owner.name, "tsa", spec.tool_selection.split),
        "--threshold",
        f"tool_selection_accuracy={spec.thresholds.tool_selection_accuracy:g}",
    ]


def _report_env(owner: Owner, parts: int) -> list[Manifest]:
    """Where and as which run each container reports its part, and how many parts make a run."""
    job_name = {"fieldRef": {"fieldPath": f"metadata.labels['{JOB_NAME_LABEL}']"}}
    return [
        {"name": STATUS_ENV, "value": f"{owner.namespace}/{owner.name}"},
        {"name": RUN_ID_ENV, "valueFrom": job_name},
        {"name": EXPECT_PARTS_ENV, "value": str(parts)},
    ]


def _container(
    name: str,
    args: list[str],
    api_key: SecretKeyRef | None,
    spec: EvalScheduleSpec,
    image: str,
    report: list[Manifest],
    traced: list[Manifest] | None = None,
) -> Manifest:
    env: list[Manifest] = [{"name": "HOME", "value": "/tmp"}, *report, *(traced or [])]
    if api_key is not None:
        env.append(secret_env(API_KEY_ENV, api_key.name, api_key.key))
    return {
        "name": name,
        "image": image,
        "args": args,
        "env": env,
        "resources": resources(spec.resources),
        "volumeMounts": [
            {"name": "dataset", "mountPath": DATASET_DIR, "readOnly": True},
            {"name": "results", "mountPath": RESULTS_DIR},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
        "securityContext": hardened_container(),
    }


def eval_trace_service(schedule: str) -> str:
    """``service.name`` of a scheduled eval's spans."""
    return f"sleuth-eval-{schedule}"


def eval_tracing_env(owner: Owner, target: EvalTarget, settings: RenderSettings) -> list[Manifest]:
    """The ``ragas`` container's ``OTEL_*`` environment: the agent's settings, every question
    recorded; empty when the agent does not trace."""
    tracing = effective_tracing(target.tracing, settings.tracing)
    if not tracing.enabled:
        return []
    every = replace(tracing, sampling_ratio=1.0)
    return tracing_env(every, eval_trace_service(owner.name), owner.namespace, messages=False)


def render_eval_cronjob(
    owner: Owner, spec: EvalScheduleSpec, target: EvalTarget, settings: RenderSettings
) -> Manifest:
    """The CronJob of an EvalSchedule."""
    image = spec.image or settings.sleuth_image
    judge_key = spec.judge.api_key_secret_ref if spec.judge else target.model_api_key
    runs_ragas = any(m in RAGAS_METRICS for m in spec.metrics)
    runs_tsa = TSA_METRIC in spec.metrics
    report = _report_env(owner, (int(runs_ragas) + int(runs_tsa)) * spec.parallelism)
    token_mount = {"name": AGENT_TOKEN_VOLUME, "mountPath": AGENT_TOKEN_DIR, "readOnly": True}
    containers: list[Manifest] = []
    volumes: list[Manifest] = [
        dataset_volume(spec),
        results_volume(spec),
        {"name": "tmp", "emptyDir": {}},
        agent_token_volume(owner, target.agent),
    ]
    if runs_ragas:
        traced = eval_tracing_env(owner, target, settings)
        ragas = ragas_args(spec, target, owner, settings)
        container = _container("ragas", ragas, judge_key, spec, image, report, traced)
        container["volumeMounts"].append(dict(token_mount))
        containers.append(container)
    if runs_tsa:
        tsa = tsa_args(spec, target, owner, settings)
        container = _container("tsa", tsa, target.model_api_key, spec, image, report)
        container["volumeMounts"] += [
            dict(token_mount),
            {"name": "tsa-cases", "mountPath": CASES_DIR, "readOnly": True},
        ]
        containers.append(container)
        volumes.append(cases_volume(spec))
    meta = metadata(cronjob_name(owner.name), owner, "eval", target.agent)
    job: Manifest = {
        "backoffLimit": spec.backoff_limit,
        "activeDeadlineSeconds": spec.active_deadline_seconds,
    }
    if spec.parallelism > 1:
        job |= {
            "completionMode": "Indexed",
            "completions": spec.parallelism,
            "parallelism": spec.parallelism,
        }
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": meta,
        "spec": {
            "schedule": spec.schedule,
            "suspend": spec.suspend,
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": spec.starting_deadline_seconds,
            "successfulJobsHistoryLimit": spec.successful_jobs_history_limit,
            "failedJobsHistoryLimit": spec.failed_jobs_history_limit,
            "jobTemplate": {
                "metadata": {"labels": meta["labels"]},
                "spec": {
                    **job,
                    "template": {
                        "metadata": {"labels": meta["labels"]},
                        "spec": place_workload(
                            {
                                "restartPolicy": "Never",
                                "serviceAccountName": eval_account_name(owner.name),
                                "automountServiceAccountToken": True,
                                "securityContext": hardened_pod(),
                                "containers": containers,
                                "volumes": volumes,
                            },
                            settings,
                        ),
                    },
                },
            },
        },
    }


__all__ = [
    "API_KEY_ENV",
    "CASES_DIR",
    "DATASET_DIR",
    "EXPECT_PARTS_ENV",
    "RESULTS_DIR",
    "RUN_ID_ENV",
    "STATUS_ENV",
    "EvalEmbeddings",
    "EvalTarget",
    "agent_url",
    "cronjob_name",
    "dataset_label",
    "eval_trace_service",
    "eval_tracing_env",
    "golden_path",
    "ragas_args",
    "render_eval_cronjob",
    "report_args",
    "tsa_args",
    "tsa_cases_path",
]
