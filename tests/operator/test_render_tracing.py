"""spec.agent.tracing over the operator's default (the chart's tracing values): the OTEL_*
environment of the agent, tool-service and scheduled-eval containers, and the refusals of bad
settings."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import yaml

from sleuth.core.api.v1alpha1 import AgentDeploymentSpec, EvalScheduleSpec, ToolBindingSpec
from sleuth.core.api.v1alpha1.tracing import TracingSpec
from sleuth.operator.reconcile_tool import agent_tracing
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.agent import render_agent
from sleuth.operator.render.evalschedule import EvalTarget, render_eval_cronjob
from sleuth.operator.render.tool import render_tool
from sleuth.operator.render.tracing import TracingDefaults
from tests.support.paths import CRDS

pytestmark = pytest.mark.unit

OWNER = Owner(kind="AgentDeployment", name="contracts", namespace="team-a", uid="uid-1")
EVAL_OWNER = Owner(kind="EvalSchedule", name="weekly", namespace="team-a", uid="uid-3")
TOOL_OWNER = Owner(kind="ToolBinding", name="contracts-sql", namespace="team-a", uid="uid-2")
MODEL = {"endpoint": "http://llama.models:8080/v1", "servedModelName": "qwen"}
COLLECTOR = "http://otel-collector.observability:4318"
JAEGER = "http://jaeger.tracing.svc:4318"
SQL = ToolBindingSpec.model_validate(
    {
        "agentRef": {"name": "contracts"},
        "type": "sql_query",
        "sqlQuery": {
            "connectionSecretRef": {"name": "pg", "key": "uri"},
            "allowedTables": ["contracts"],
        },
    }
)


def _settings(**tracing: Any) -> RenderSettings:
    return RenderSettings(tracing=TracingDefaults(**tracing))


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def _otel(env: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in env.items() if k.startswith("OTEL_")}


def _agent_env(tracing: dict[str, Any], settings: RenderSettings) -> dict[str, Any]:
    spec = AgentDeploymentSpec.model_validate(
        {"model": MODEL, "agent": {"tracing": tracing} if tracing else {}}
    )
    deployment = render_agent(OWNER, spec, [], settings)[1]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return _otel(_env(container))


def _tool_env(tracing: dict[str, Any] | None, settings: RenderSettings) -> dict[str, Any]:
    spec = TracingSpec.model_validate(tracing) if tracing is not None else None
    deployment = render_tool(TOOL_OWNER, SQL, settings, spec)[2]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return _otel(_env(container))


def test_tracing_is_off_without_an_endpoint() -> None:
    assert _agent_env({}, RenderSettings()) == {}
    assert _tool_env(None, RenderSettings()) == {}
    # A ratio or content capture alone names no backend: still nothing.
    assert _agent_env({"samplingRatio": 0.5, "captureContent": True}, RenderSettings()) == {}


def test_the_chart_default_reaches_the_agent_and_its_tool_service() -> None:
    settings = _settings(endpoint=COLLECTOR, sampling_ratio=0.25)
    assert _agent_env({}, settings) == {
        "OTEL_EXPORTER_OTLP_ENDPOINT": COLLECTOR,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_SERVICE_NAME": "sleuth-agent-contracts",
        "OTEL_RESOURCE_ATTRIBUTES": "k8s.namespace.name=team-a",
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": "0.25",
    }
    tool = _tool_env(None, settings)
    assert tool["OTEL_SERVICE_NAME"] == "sleuth-tool-contracts-sql"
    assert tool["OTEL_EXPORTER_OTLP_ENDPOINT"] == COLLECTOR
    assert tool["OTEL_TRACES_SAMPLER_ARG"] == "0.25"


def test_the_agent_spec_overrides_the_default_field_by_field() -> None:
    settings = _settings(endpoint=COLLECTOR, sampling_ratio=0.25, capture_content=True)
    env = _agent_env({"endpoint": JAEGER}, settings)
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == JAEGER
    assert env["OTEL_TRACES_SAMPLER_ARG"] == "0.25"  # not overridden: the default's
    assert env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] == "true"
    env = _agent_env({"samplingRatio": 1, "captureContent": False}, settings)
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == COLLECTOR
    assert env["OTEL_TRACES_SAMPLER_ARG"] == "1"
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" not in env
    # An agent's own endpoint turns tracing on when the operator has none.
    assert _agent_env({"endpoint": JAEGER}, RenderSettings())["OTEL_SERVICE_NAME"] == (
        "sleuth-agent-contracts"
    )


def test_a_ratio_of_zero_turns_tracing_off_for_that_agent() -> None:
    settings = _settings(endpoint=COLLECTOR)
    assert _agent_env({"samplingRatio": 0}, settings) == {}
    assert _tool_env({"samplingRatio": 0}, settings) == {}


def test_content_is_captured_only_where_prompts_are_sent() -> None:
    """The agent sends prompts; a tool service never gets the capture switch."""
    settings = _settings(endpoint=COLLECTOR, capture_content=True)
    assert _agent_env({}, settings)["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] == "true"
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" not in _tool_env(None, settings)


def test_headers_come_from_a_secret_in_both_pods() -> None:
    tracing = {"endpoint": JAEGER, "headersSecretRef": {"name": "langfuse", "key": "otlp-headers"}}
    want = {"secretKeyRef": {"name": "langfuse", "key": "otlp-headers"}}
    assert _agent_env(tracing, RenderSettings())["OTEL_EXPORTER_OTLP_HEADERS"] == want
    assert _tool_env(tracing, RenderSettings())["OTEL_EXPORTER_OTLP_HEADERS"] == want


def test_a_tracing_change_rolls_the_agent_pods() -> None:
    """The env is in the pod template: a change of settings is a new template."""
    spec = AgentDeploymentSpec.model_validate({"model": MODEL})
    before = render_agent(OWNER, spec, [], RenderSettings())[1]["spec"]["template"]
    after = render_agent(OWNER, spec, [], _settings(endpoint=COLLECTOR))[1]["spec"]["template"]
    assert before != after


def test_the_tool_service_follows_its_agents_tracing() -> None:
    agent = {"spec": {"model": MODEL, "agent": {"tracing": {"endpoint": JAEGER}}}}
    assert agent_tracing(agent) == TracingSpec(endpoint=JAEGER)
    assert agent_tracing({"spec": {"model": MODEL}}) == TracingSpec()
    # An invalid one (the agent's own status reports it) leaves the operator's default.
    assert agent_tracing({"spec": {"agent": {"tracing": {"samplingRatio": 7}}}}) is None


@pytest.mark.parametrize(
    ("tracing", "field"),
    [
        ({"endpoint": "jaeger:4318"}, "tracing.endpoint"),
        ({"endpoint": "ftp://jaeger:4318"}, "tracing.endpoint"),
        ({"samplingRatio": 1.5}, "tracing.samplingRatio"),
        ({"samplingRatio": -0.1}, "tracing.samplingRatio"),
        ({"sampler": "always_on"}, "tracing.sampler"),
        ({"headersSecretRef": {"name": "langfuse"}}, "tracing.headersSecretRef.key"),
    ],
)
def test_bad_tracing_is_refused_naming_the_field(tracing: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        AgentDeploymentSpec.model_validate({"model": MODEL, "agent": {"tracing": tracing}})


@pytest.mark.parametrize(
    "defaults",
    [{"endpoint": "jaeger:4318"}, {"sampling_ratio": 2.0}, {"sampling_ratio": -1.0}],
)
def test_bad_operator_defaults_are_refused(defaults: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="tracing"):
        TracingDefaults(**defaults)


def test_the_operator_flags_reach_the_render_settings() -> None:
    from sleuth.core.cli import build_parser
    from sleuth.operator.main import operator_settings

    args = build_parser("operator").parse_args(
        [
            "operator",
            "--tracing-endpoint",
            COLLECTOR,
            "--tracing-sampling-ratio",
            "0.1",
            "--tracing-capture-content",
        ]
    )
    expected = TracingDefaults(endpoint=COLLECTOR, sampling_ratio=0.1, capture_content=True)
    assert operator_settings(args, environ={}).render.tracing == expected
    plain = build_parser("operator").parse_args(["operator"])
    assert operator_settings(plain, environ={}).render.tracing == TracingDefaults()


@pytest.mark.parametrize(
    "flags",
    [["--tracing-sampling-ratio", "2"], ["--tracing-endpoint", "jaeger:4318"]],
)
def test_the_operator_refuses_bad_tracing_flags_before_it_starts(flags: list[str]) -> None:
    from sleuth.core.cli import build_parser

    args = build_parser("operator").parse_args(["operator", *flags])
    with pytest.raises(SystemExit, match="--tracing"):
        args.func(args)


def _crd_schema() -> dict[str, Any]:
    crd = yaml.safe_load((CRDS / "sleuth.dev_agentdeployments.yaml").read_text())
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema["properties"]["spec"]["properties"]["agent"]["properties"]["tracing"]


@pytest.mark.parametrize(
    ("tracing", "ok"),
    [
        ({"endpoint": JAEGER, "samplingRatio": 0.1, "captureContent": True}, True),
        ({"samplingRatio": 0}, True),
        ({"endpoint": "jaeger:4318"}, False),
        ({"samplingRatio": 1.5}, False),
        ({"samplingRatio": -0.5}, False),
    ],
)
def test_the_checked_in_crd_carries_the_same_bounds(tracing: dict[str, Any], ok: bool) -> None:
    """What the apiserver enforces (the CRD's schema; applied for real in
    tests/operator/test_cluster_invalid.py) agrees with the model."""
    errors = list(jsonschema.Draft7Validator(_crd_schema()).iter_errors(tracing))
    assert (not errors) is ok, errors


def _eval_env(tracing: dict[str, Any] | None, settings: RenderSettings) -> dict[str, Any]:
    spec = EvalScheduleSpec.model_validate(
        {
            "agentRef": {"name": "contracts"},
            "schedule": "0 3 * * 1",
            "dataset": {"configMapRef": {"name": "golden", "key": "golden.jsonl"}},
            "metrics": ["faithfulness", "toolSelectionAccuracy"],
            "toolSelection": {"configMapRef": {"name": "tsa", "key": "tsa.jsonl"}},
        }
    )
    target = EvalTarget(
        agent="contracts",
        model_endpoint=MODEL["endpoint"],
        model="qwen",
        tracing=TracingSpec.model_validate(tracing) if tracing is not None else None,
    )
    cronjob = render_eval_cronjob(EVAL_OWNER, spec, target, settings)
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    ragas, tsa = pod["containers"]
    assert _otel(_env(tsa)) == {}  # the TSA container asks the model only: no trace to join
    return _otel(_env(ragas))


def test_a_scheduled_eval_traces_when_its_agent_does_and_records_every_question() -> None:
    assert _eval_env(None, RenderSettings()) == {}
    assert _eval_env({"samplingRatio": 0}, _settings(endpoint=COLLECTOR)) == {}
    env = _eval_env({"endpoint": JAEGER, "captureContent": True}, _settings(sampling_ratio=0.1))
    assert env == {
        "OTEL_EXPORTER_OTLP_ENDPOINT": JAEGER,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_SERVICE_NAME": "sleuth-eval-weekly",
        "OTEL_RESOURCE_ATTRIBUTES": "k8s.namespace.name=team-a",
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": "1",  # a run asks few questions: every one is recorded
    }
