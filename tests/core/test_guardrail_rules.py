"""The guardrail rules of the API: which fields are Secret references, endpoints and images (from
the models themselves), the Secret opt-in annotation, the allowlists, the extraArgs that widen
vLLM and GPU resources that contradict gpu.count. The CEL twins are evaluated by the real
apiserver in tests/charts/test_chart_admission.py and tests/operator/test_cluster_guardrails.py."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from sleuth.core.api import admissiongen
from sleuth.core.api.v1alpha1 import AgentDeploymentSpec, EvalScheduleSpec, ToolBindingSpec
from sleuth.core.api.v1alpha1.allowlists import (
    Allowlists,
    endpoint_allowed,
    endpoint_problem,
    image_allowed,
    image_problem,
    repository,
    validations,
)
from sleuth.core.api.v1alpha1.secretuse import (
    AGENT_DEPLOYMENT_USES,
    EVAL_SCHEDULE_USES,
    agent_secret_uses,
    allows,
    eval_secret_uses,
    tool_secret_uses,
)
from sleuth.core.api.v1alpha1.specpaths import (
    endpoint_paths,
    image_paths,
    secret_ref_paths,
    values_at,
)
from sleuth.core.api.v1alpha1.vllmargs import WIDENING_FLAGS, widening_flag, widening_validation
from tests.support.guardrail_cases import ALLOWLISTS, ENDPOINTS, IMAGES

pytestmark = pytest.mark.unit


def test_every_secret_reference_endpoint_and_image_is_found_in_the_models() -> None:
    assert set(secret_ref_paths(AgentDeploymentSpec)) == set(AGENT_DEPLOYMENT_USES)
    assert set(secret_ref_paths(EvalScheduleSpec)) == set(EVAL_SCHEDULE_USES)
    assert set(secret_ref_paths(ToolBindingSpec)) == {
        "sqlQuery.connectionSecretRef",
        "vectorSearch.apiKeySecretRef",
        "vectorSearch.embedding.apiKeySecretRef",
        "vectorSearch.reranker.apiKeySecretRef",
        "webSearch.apiKeySecretRef",
    }
    assert set(endpoint_paths(AgentDeploymentSpec)) == {
        "model.endpoint",
        "agent.tracing.endpoint",
        "agent.onlineEval.judge.endpoint",
        "agent.onlineEval.embeddings.endpoint",
        "agent.access.issuers[].jwksUrl",  # the agent's pods read it: a host it contacts
    }
    assert set(endpoint_paths(ToolBindingSpec)) == {
        "vectorSearch.url",
        "vectorSearch.embedding.endpoint",
        "vectorSearch.reranker.endpoint",
        "webSearch.url",
    }
    assert set(endpoint_paths(EvalScheduleSpec)) == {"judge.endpoint"}
    assert set(image_paths(AgentDeploymentSpec)) == {"model.image", "agent.image"}
    assert image_paths(ToolBindingSpec) == ["image"]
    assert image_paths(EvalScheduleSpec) == ["image"]


WEB_SEARCH: dict[str, Any] = {
    "agentRef": {"name": "contracts"},
    "type": "web_search",
    "webSearch": {
        "url": "http://collector.attacker.example",
        "allowExternal": True,
        "apiKeySecretRef": {"name": "contracts-postgres", "key": "uri"},
    },
}


def test_a_secret_is_used_only_for_the_uses_its_annotation_names() -> None:
    (use,) = tool_secret_uses(ToolBindingSpec.model_validate(WEB_SEARCH))
    assert (use.field, use.ref.name, use.entry) == (
        "spec.webSearch.apiKeySecretRef",
        "contracts-postgres",
        "ToolBinding/web_search",
    )
    db = {"sleuth.dev/allowed-uses": "ToolBinding/sql_query"}
    assert not allows(db, use.kind, use.use)  # the database's Secret is not a search key
    assert not allows(None, use.kind, use.use)  # no annotation: no use
    assert not allows({"sleuth.dev/allowed-uses": ""}, use.kind, use.use)
    assert allows(
        {"sleuth.dev/allowed-uses": " ToolBinding/web_search , X"}, "ToolBinding", "web_search"
    )
    assert allows({"sleuth.dev/allowed-uses": "ToolBinding"}, "ToolBinding", "web_search")
    assert not allows({"sleuth.dev/allowed-uses": "ToolBinding/web"}, "ToolBinding", "web_search")
    assert not allows({"sleuth.dev/allowed-uses": "AgentDeployment"}, "ToolBinding", "web_search")


def test_every_secret_of_an_agent_and_an_eval_schedule_has_its_use() -> None:
    agent = AgentDeploymentSpec.model_validate(
        {
            "model": {
                "name": "meta-llama/Llama-3.1-8B-Instruct",
                "tokenSecretRef": {"name": "hf", "key": "token"},
            },
            "agent": {
                "tracing": {"headersSecretRef": {"name": "otel", "key": "h"}},
                "onlineEval": {
                    "judge": {
                        "endpoint": "http://judge.evals.svc/v1",
                        "model": "j",
                        "apiKeySecretRef": {"name": "judge", "key": "k"},
                    }
                },
            },
        }
    )
    assert sorted(u.entry for u in agent_secret_uses(agent)) == [
        "AgentDeployment/model-token",
        "AgentDeployment/online-eval-judge",
        "AgentDeployment/tracing-headers",
    ]
    schedule = EvalScheduleSpec.model_validate(
        {
            "agentRef": {"name": "a"},
            "schedule": "0 * * * *",
            "dataset": {"configMapRef": {"name": "d", "key": "g.jsonl"}},
            "judge": {
                "endpoint": "http://judge.evals.svc/v1",
                "model": "j",
                "apiKeySecretRef": {"name": "judge", "key": "k"},
            },
        }
    )
    assert [u.entry for u in eval_secret_uses(schedule)] == ["EvalSchedule/judge-api-key"]


@pytest.mark.parametrize(("url", "allowed"), ENDPOINTS)
def test_endpoints_outside_the_allowlist_are_refused(url: str, allowed: bool) -> None:
    assert endpoint_allowed(url, ALLOWLISTS) is allowed


@pytest.mark.parametrize(("image", "allowed"), IMAGES)
def test_images_outside_the_allowlist_are_refused(image: str, allowed: bool) -> None:
    assert image_allowed(image, ALLOWLISTS) is allowed


def test_a_refusal_names_the_field() -> None:
    wire = ToolBindingSpec.model_validate(WEB_SEARCH).to_wire()
    assert endpoint_problem(ToolBindingSpec, wire, Allowlists()).startswith(
        "spec.webSearch.url: not an allowed endpoint"
    )
    image = {**wire, "image": "docker.io/attacker/miner:1"}
    problem = image_problem(ToolBindingSpec, image, Allowlists())
    assert problem.startswith("spec.image: repository docker.io/attacker/miner is not allowed")
    assert repository("localhost:5000/a/b:1@sha256:" + "0" * 64) == "localhost:5000/a/b"
    assert repository("localhost:5000/a/b") == "localhost:5000/a/b"


def _issuers(*jwks: str) -> dict[str, Any]:
    issuers = [{"issuer": f"https://idp{i}.example", "jwksUrl": url} for i, url in enumerate(jwks)]
    return {
        "model": {"endpoint": "http://vllm.models.svc:8000/v1", "servedModelName": "m"},
        "agent": {"access": {"issuers": issuers}},
    }


def test_a_jwks_url_outside_the_allowlist_is_refused_naming_the_issuer() -> None:
    spec = _issuers(
        "https://keycloak.auth.svc/realms/x/certs",  # a Service of the cluster
        "https://api.trusted.example/jwks",  # a listed host
        "https://keys.attacker.example/jwks",
    )
    wire = AgentDeploymentSpec.model_validate(spec).to_wire()
    assert endpoint_problem(AgentDeploymentSpec, wire, ALLOWLISTS) == (
        "spec.agent.access.issuers[2].jwksUrl: not an allowed endpoint: use a Service by its "
        "cluster name (http[s]://<service>.<namespace>.svc[.<cluster domain>]) or an https:// "
        "host the platform team allows"
    )
    wire["agent"]["access"]["issuers"].pop()
    assert endpoint_problem(AgentDeploymentSpec, wire, ALLOWLISTS) == ""
    assert endpoint_problem(AgentDeploymentSpec, wire, Allowlists()).startswith(
        "spec.agent.access.issuers[1].jwksUrl"  # nothing listed: cluster Services only
    )
    with pytest.raises(ValueError, match=r"issuers\.0\.jwksUrl"):  # plain HTTP: never
        AgentDeploymentSpec.model_validate(_issuers("http://keycloak.auth.svc/certs"))


def test_values_in_lists_are_found_with_their_index() -> None:
    wire = {"a": {"items": [{"u": "x"}, {}, {"u": "z"}]}, "b": None}
    assert values_at(wire, "a.items[].u") == [("a.items[0].u", "x"), ("a.items[2].u", "z")]
    assert values_at(wire, "b.items[].u") == []
    assert values_at({"a": {"items": "not a list"}}, "a.items[].u") == []
    assert values_at(wire, "a") == [("a", wire["a"])]


def test_malformed_allowlist_entries_are_refused() -> None:
    with pytest.raises(ValueError, match=r"allowed host 'search\.example\.com'"):
        Allowlists(hosts=("search.example.com",))
    with pytest.raises(ValueError, match="allowed image repository"):
        Allowlists(repositories=("Registry/Upper",))


SERVED = {"name": "meta-llama/Llama-3.1-8B-Instruct"}


@pytest.mark.parametrize(
    ("arg", "flag"),
    [
        ("--trust-remote-code", "--trust-remote-code"),
        ("--trust_remote_code", "--trust-remote-code"),
        ("--trust-remote", "--trust-remote-code"),  # argparse takes an unambiguous prefix
        ("--trust-remote-code=true", "--trust-remote-code"),
        ("--allowed-local-media-path=/", "--allowed-local-media-path"),
        ("--tool-parser-plugin", "--tool-parser-plugin"),
        ("--kv-transfer-config.kv_connector=X", "--kv-transfer-config"),
        ("--api-key=sk-123", "--api-key"),
    ],
)
def test_extra_args_that_widen_the_model_server_are_refused(arg: str, flag: str) -> None:
    message = widening_flag(["--gpu-memory-utilization=0.9", arg])
    assert message is not None
    assert message.startswith(f"spec.model.extraArgs[1]: {flag}")
    with pytest.raises(ValueError, match=r"spec.model.extraArgs\[0\]"):
        AgentDeploymentSpec.model_validate({"model": {**SERVED, "extraArgs": [arg]}})


@pytest.mark.parametrize(
    "arg",
    [
        "--gpu-memory-utilization=0.92",
        "--config-format=auto",
        "--api-server-count=2",
        "0.9",
        "--enable-prefix-caching",
        "--chat-template=/t.jinja",
        "--compilation-config={}",
    ],
)
def test_extra_args_that_do_not_widen_it_pass(arg: str) -> None:
    assert widening_flag([arg]) is None
    AgentDeploymentSpec.model_validate({"model": {**SERVED, "extraArgs": [arg]}})


def test_the_widening_table_covers_the_flags_the_issue_names() -> None:
    assert {"--trust-remote-code", "--allowed-local-media-path"} <= set(WIDENING_FLAGS)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ({"gpu": {"count": 2}, "resources": {"limits": {"nvidia.com/gpu": 1}}}, "limits"),
        ({"resources": {"limits": {"nvidia.com/gpu": "2"}}}, "limits"),
        ({"tensorParallelSize": 2, "resources": {"requests": {"nvidia.com/gpu": 4}}}, "requests"),
    ],
)
def test_gpu_resources_that_contradict_gpu_count_are_refused(
    model: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=rf"spec.model.resources.{message}.nvidia.com/gpu"):
        AgentDeploymentSpec.model_validate({"model": {**SERVED, **model}})


def test_gpu_resources_that_agree_with_gpu_count_pass() -> None:
    AgentDeploymentSpec.model_validate(
        {"model": {**SERVED, "gpu": {"count": 2}, "resources": {"limits": {"nvidia.com/gpu": 2}}}}
    )


def test_the_chart_policies_are_generated_from_the_rules() -> None:
    assert not admissiongen.sync(check=True), "run `sleuth crds generate`"
    text = admissiongen.POLICY_TEMPLATE.read_text(encoding="utf-8")
    for model in (AgentDeploymentSpec, ToolBindingSpec, EvalScheduleSpec):
        for validation in validations(model):
            assert yaml.safe_dump(validation["message"], width=10_000).strip() in text
    assert yaml.safe_dump(widening_validation()["message"], width=10_000).strip() in text
