"""Property tests: any valid spec renders deterministically, owned, labelled and well-formed."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth.core.api.agent_config import parse_agent_config
from sleuth.core.api.v1alpha1 import AgentDeploymentSpec, ToolBindingSpec
from sleuth.core.api.v1alpha1.contexts import context_limit
from sleuth.core.api.v1alpha1.vllmargs import managed_flag, widening_flag
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.agent import Binding, agent_config, render_agent
from sleuth.operator.render.meta import CONFIG_HASH_ANNOTATION
from sleuth.operator.render.model import render_model
from sleuth.operator.render.owned import agent_children, tool_children

pytestmark = pytest.mark.unit

SETTINGS = RenderSettings()
STANDARD = {
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/component",
    "app.kubernetes.io/part-of",
    "app.kubernetes.io/managed-by",
}
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")

names = st.from_regex(r"[a-z][a-z0-9]{0,20}(-[a-z0-9]{1,8})?", fullmatch=True)
families = st.sampled_from(
    [
        "meta-llama/Llama-3.1-70B-Instruct",
        "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        "Qwen/Qwen2.5-72B-Instruct",
        "mistralai/Mistral-7B-Instruct-v0.3",
    ]
)
text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=40)


@st.composite
def served_model(draw: st.DrawFn) -> dict[str, Any]:
    tp = draw(st.sampled_from([1, 2, 4, 8]))
    name = draw(families)
    model: dict[str, Any] = {"name": name, "tensorParallelSize": tp}
    if draw(st.booleans()):
        model["gpu"] = {"count": tp * draw(st.integers(1, 8 // tp))}
    if draw(st.booleans()):
        model["quantization"] = draw(st.sampled_from(["fp8", "awq"]))
    if draw(st.booleans()):
        limit = context_limit(name)
        model["maxModelLen"] = draw(st.integers(256, limit.tokens if limit else 131072))
    if draw(st.booleans()):
        flags = st.from_regex(r"--[a-z-]{1,12}", fullmatch=True).filter(
            lambda arg: managed_flag(arg) is None and widening_flag([arg]) is None
        )
        model["extraArgs"] = draw(st.lists(flags))
    if draw(st.booleans()):
        model["cache"] = draw(st.sampled_from([{"size": "200Gi"}, {"claimName": "weights"}]))
    if draw(st.booleans()):
        model["tokenSecretRef"] = {"name": "hf", "key": "token"}
    if draw(st.booleans()):
        model["replicas"] = draw(st.integers(0, 4))
    return model


endpoint_model = st.fixed_dictionaries(
    {"endpoint": st.just("http://vllm.models:8000/v1"), "servedModelName": names}
)


@st.composite
def agent_specs(draw: st.DrawFn) -> dict[str, Any]:
    agent: dict[str, Any] = {
        "replicas": draw(st.integers(0, 5)),
        "maxIterations": draw(st.integers(1, 10)),
    }
    if draw(st.booleans()):
        agent["parallelToolCalls"] = draw(st.booleans())
    if draw(st.booleans()):
        agent["systemPrompt"] = draw(text)
    if draw(st.booleans()):
        agent["requestTimeoutSeconds"] = draw(st.integers(1, 3600))
    model = draw(st.one_of(served_model(), endpoint_model))
    return {"model": model, "agent": agent}


@st.composite
def bindings(draw: st.DrawFn, agent: str) -> list[Binding]:
    kinds = draw(
        st.lists(st.sampled_from(["vector_search", "sql_query", "web_search"]), max_size=4)
    )
    out = []
    for i, kind in enumerate(kinds):
        spec: dict[str, Any] = {"agentRef": {"name": agent}, "type": kind, "name": f"{kind}_{i}"}
        if kind == "vector_search":
            spec["vectorSearch"] = {"url": "http://qdrant:6333", "collection": draw(names)}
        elif kind == "sql_query":
            spec["sqlQuery"] = {
                "connectionSecretRef": {"name": "db", "key": "uri"},
                "allowedTables": draw(
                    st.lists(
                        st.from_regex(r"[a-z_]{1,10}", fullmatch=True), min_size=1, unique=True
                    )
                ),
            }
        else:
            spec["webSearch"] = {"url": "http://searx:8080", "allowExternal": True}
        if draw(st.booleans()):
            spec["description"] = draw(text.filter(lambda s: s.strip() != ""))
        if draw(st.booleans()):
            spec["timeoutSeconds"] = draw(st.integers(1, 300))
        out.append(Binding(f"tb-{i}", ToolBindingSpec.model_validate(spec)))
    return out


def _render_all(owner: Owner, spec: AgentDeploymentSpec, bound: list[Binding]) -> list[Any]:
    objs = agent_children(owner, spec, bound, SETTINGS)
    for b in bound:
        objs += tool_children(
            Owner("ToolBinding", b.name, owner.namespace, f"u-{b.name}"), b.spec, SETTINGS
        )
    return objs


@settings(max_examples=60, deadline=None)
@given(name=names, raw=agent_specs(), data=st.data())
def test_any_valid_spec_renders_owned_labelled_and_deterministic(
    name: str, raw: dict[str, Any], data: st.DataObject
) -> None:
    spec = AgentDeploymentSpec.model_validate(raw)
    owner = Owner("AgentDeployment", name, "ns", "uid-1")
    bound = data.draw(bindings(name))
    first = _render_all(owner, spec, bound)
    assert first == _render_all(owner, spec, bound)
    assert render_agent(owner, spec, list(reversed(bound)), SETTINGS) == render_agent(
        owner, spec, bound, SETTINGS
    )
    kinds = [o["kind"] for o in first]
    assert kinds.count("Deployment") == (2 if spec.model.serves else 1) + len(bound)
    for obj in first:
        meta = obj["metadata"]
        assert DNS_1035.match(meta["name"]), meta["name"]
        assert meta["namespace"] == "ns"
        assert set(meta["labels"]) >= STANDARD
        assert meta["labels"]["sleuth.dev/agent"] == name
        (ref,) = meta["ownerReferences"]
        assert ref["controller"] is True
        assert ref["uid"] == ("uid-1" if ref["kind"] == "AgentDeployment" else f"u-{ref['name']}")
        if obj["kind"] == "Deployment":
            template = obj["spec"]["template"]
            selector = obj["spec"]["selector"]["matchLabels"]
            assert selector.items() <= template["metadata"]["labels"].items()
            # Default deny: a NetworkPolicy of the same render selects the pods, and comes first.
            labels = template["metadata"]["labels"].items()
            policies = [
                i
                for i, p in enumerate(first)
                if p["kind"] == "NetworkPolicy"
                and p["spec"]["podSelector"]["matchLabels"].items() <= labels
                and "Ingress" in p["spec"]["policyTypes"]
            ]
            assert policies, meta["name"]
            assert policies[0] < first.index(obj), meta["name"]
            assert template["spec"]["automountServiceAccountToken"] is False
            if meta["labels"]["app.kubernetes.io/component"] in ("agent", "tool"):
                _assert_drains(template["spec"], _in_flight_seconds(obj, spec, bound))
    if spec.model.serves:
        pod = first[1]["spec"]["template"]["spec"]  # after the model server's NetworkPolicy
        limits = pod["containers"][0]["resources"]["limits"]
        assert limits["nvidia.com/gpu"] == spec.model.effective_gpu.count
        args = pod["containers"][0]["args"]
        assert args[args.index("--tool-call-parser") + 1] == spec.model.effective_parser
    configmap = render_agent(owner, spec, bound, SETTINGS)[0]
    parsed = parse_agent_config(configmap["data"]["config.yaml"])
    assert parsed == agent_config(owner, spec, bound, SETTINGS)
    assert {t.name for t in parsed.tools} == {b.spec.tool_name for b in bound}


def _in_flight_seconds(deployment: Any, spec: AgentDeploymentSpec, bound: list[Binding]) -> int:
    """The longest request an agent or tool pod may have in flight when it is told to stop."""
    if deployment["metadata"]["labels"]["app.kubernetes.io/component"] == "agent":
        return spec.agent.request_timeout_seconds
    owner = deployment["metadata"]["ownerReferences"][0]["name"]
    return next(b.spec.timeout_seconds for b in bound if b.name == owner)


def _assert_drains(pod: dict[str, Any], in_flight: int) -> None:
    """A replaced pod keeps serving until the Service has forgotten it, then finishes what is in
    flight before kubelet kills it (a rollout under traffic fails no request)."""
    (container,) = pod["containers"]
    pause = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert pause >= 3
    assert pod["terminationGracePeriodSeconds"] > pause + in_flight


@settings(max_examples=30, deadline=None)
@given(raw=agent_specs(), iterations=st.integers(1, 10))
def test_a_config_change_rolls_the_agent_pods(raw: dict[str, Any], iterations: int) -> None:
    owner = Owner("AgentDeployment", "a", "ns", "uid")
    before = AgentDeploymentSpec.model_validate(raw)
    after = AgentDeploymentSpec.model_validate(
        {**raw, "agent": {**raw["agent"], "maxIterations": iterations}}
    )

    def digest(spec: AgentDeploymentSpec) -> str:
        deployment = render_agent(owner, spec, [], SETTINGS)[1]
        value: str = deployment["spec"]["template"]["metadata"]["annotations"][
            CONFIG_HASH_ANNOTATION
        ]
        return value

    changed = iterations != raw["agent"]["maxIterations"]
    assert (digest(before) != digest(after)) == changed


def test_endpoint_mode_renders_no_model_server() -> None:
    spec = AgentDeploymentSpec.model_validate(
        {"model": {"endpoint": "http://vllm.models:8000/v1", "servedModelName": "llama"}}
    )
    owner = Owner("AgentDeployment", "a", "ns", "uid")
    assert render_model(owner, spec.model, SETTINGS) == []
    config = yaml.safe_load(render_agent(owner, spec, [], SETTINGS)[0]["data"]["config.yaml"])
    assert config["model"]["endpoint"] == "http://vllm.models:8000/v1"


@pytest.mark.parametrize(("replicas", "budget"), [(0, False), (1, False), (2, True), (5, True)])
def test_an_agent_with_more_than_one_replica_gets_a_disruption_budget(
    replicas: int, budget: bool
) -> None:
    spec = AgentDeploymentSpec.model_validate(
        {
            "model": {"endpoint": "http://vllm.models:8000/v1", "servedModelName": "llama"},
            "agent": {"replicas": replicas},
        }
    )
    owner = Owner("AgentDeployment", "a", "ns", "uid")
    pdbs = [
        m for m in render_agent(owner, spec, [], SETTINGS) if m["kind"] == "PodDisruptionBudget"
    ]
    assert bool(pdbs) is budget
    if budget:
        (pdb,) = pdbs
        assert pdb["spec"]["maxUnavailable"] == 1
        (deployment,) = [
            m for m in render_agent(owner, spec, [], SETTINGS) if m["kind"] == "Deployment"
        ]
        assert pdb["spec"]["selector"] == deployment["spec"]["selector"]
