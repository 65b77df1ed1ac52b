"""Default-deny NetworkPolicies: who may reach each pod, and where each pod may go."""

from __future__ import annotations

from typing import Any

import pytest

from sleuth.core.api.v1alpha1 import AgentDeploymentSpec, ToolBindingSpec
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.agent import Binding
from sleuth.operator.render.netpol import (
    eval_network_policy,
    model_network_policy,
    parse_peers,
    tool_network_policy,
    url_peers,
)
from sleuth.operator.render.netpol_agent import agent_network_policy
from sleuth.operator.render.tracing import TracingDefaults, effective_tracing

pytestmark = pytest.mark.unit

NS = "team-a"
AGENT = Owner("AgentDeployment", "shop", NS, "u-1")
SETTINGS = RenderSettings()
DNS = {"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]}
ANYWHERE = [{"ipBlock": {"cidr": "0.0.0.0/0"}}, {"ipBlock": {"cidr": "::/0"}}]


def _ns(name: str) -> dict[str, Any]:
    return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}}}


@pytest.mark.parametrize(
    ("url", "rules"),
    [
        (
            "http://10.1.2.3:6333",
            [
                {
                    "to": [{"ipBlock": {"cidr": "10.1.2.3/32"}}],
                    "ports": [{"port": 6333, "protocol": "TCP"}],
                }
            ],
        ),
        ("http://qdrant:6333", [{"to": [{"podSelector": {}}]}]),
        ("http://qdrant.data.svc:6333", [{"to": [_ns("data")]}]),
        ("http://qdrant.data.svc.cluster.local:6333/", [{"to": [_ns("data")]}]),
        (
            "http://jaeger.observability:4318",
            [
                {"to": [_ns("observability")]},
                {"to": ANYWHERE, "ports": [{"port": 4318, "protocol": "TCP"}]},
            ],
        ),
        (
            "https://api.search.example/v1",
            [{"to": ANYWHERE, "ports": [{"port": 443, "protocol": "TCP"}]}],
        ),
        (
            "http://[fd00::1]:8000/v1",
            [
                {
                    "to": [{"ipBlock": {"cidr": "fd00::1/128"}}],
                    "ports": [{"port": 8000, "protocol": "TCP"}],
                }
            ],
        ),
    ],
)
def test_an_endpoint_url_becomes_the_peers_it_names(url: str, rules: list[Any]) -> None:
    assert url_peers(url, SETTINGS) == rules


def _agent(**model: Any) -> AgentDeploymentSpec:
    return AgentDeploymentSpec.model_validate(
        {"model": model or {"name": "Qwen/Qwen2.5-7B-Instruct"}}
    )


def test_the_agent_is_called_by_its_namespace_and_calls_only_its_own() -> None:
    policy = agent_network_policy(AGENT, _agent(), [], SETTINGS)
    spec = policy["spec"]
    assert policy["metadata"]["name"] == "shop-agent"
    assert spec["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "agent"
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["ingress"] == [
        {"from": [{"podSelector": {}}], "ports": [{"port": 8080, "protocol": "TCP"}]}
    ]
    tools = {"app.kubernetes.io/component": "tool", "sleuth.dev/agent": "shop"}
    model = {
        "app.kubernetes.io/name": "sleuth-model",
        "app.kubernetes.io/instance": "shop",
        "app.kubernetes.io/component": "model",
    }
    assert spec["egress"] == [
        DNS,
        {
            "to": [{"podSelector": {"matchLabels": tools}}],
            "ports": [{"port": 8080, "protocol": "TCP"}],
        },
        {
            "to": [{"podSelector": {"matchLabels": model}}],
            "ports": [{"port": 8000, "protocol": "TCP"}],
        },
    ]


def test_an_endpoint_model_judge_and_tracing_are_the_agents_other_peers() -> None:
    spec = AgentDeploymentSpec.model_validate(
        {
            "model": {"endpoint": "https://llm.example/v1", "servedModelName": "m"},
            "agent": {
                "onlineEval": {
                    "sampleRate": 0.1,
                    "judge": {"endpoint": "http://judge.models.svc:8000/v1", "model": "j"},
                },
                "tracing": {"endpoint": "http://10.9.9.9:4318"},
            },
        }
    )
    egress = agent_network_policy(AGENT, spec, [], SETTINGS)["spec"]["egress"]
    assert {"to": ANYWHERE, "ports": [{"port": 443, "protocol": "TCP"}]} in egress
    assert {"to": [_ns("models")]} in egress
    assert {
        "to": [{"ipBlock": {"cidr": "10.9.9.9/32"}}],
        "ports": [{"port": 4318, "protocol": "TCP"}],
    } in egress
    assert not any("sleuth-model" in str(rule) for rule in egress)  # no model pods of its own


def test_the_jwks_of_an_external_issuer_is_one_of_the_agents_peers() -> None:
    spec = AgentDeploymentSpec.model_validate(
        {
            "model": {"endpoint": "http://vllm.models.svc:8000/v1", "servedModelName": "m"},
            "agent": {
                "access": {
                    "issuers": [
                        {
                            "issuer": "https://login.example",
                            "jwksUrl": "https://keycloak.auth.svc:8443/realms/x/certs",
                        }
                    ]
                }
            },
        }
    )
    egress = agent_network_policy(AGENT, spec, [], SETTINGS)["spec"]["egress"]
    assert {"to": [_ns("auth")]} in egress  # the JWKS's Service, and nowhere else
    assert not any("0.0.0.0/0" in str(rule) for rule in egress)


def test_the_model_server_admits_its_agent_and_eval_jobs_only() -> None:
    spec = model_network_policy(AGENT, SETTINGS)["spec"]
    assert spec["policyTypes"] == ["Ingress"]
    (rule,) = spec["ingress"]
    assert rule["ports"] == [{"port": 8000, "protocol": "TCP"}]
    assert rule["from"] == [
        {
            "podSelector": {
                "matchLabels": {
                    "app.kubernetes.io/name": "sleuth-agent",
                    "app.kubernetes.io/instance": "shop",
                    "app.kubernetes.io/component": "agent",
                }
            }
        },
        {
            "podSelector": {
                "matchLabels": {"app.kubernetes.io/component": "eval", "sleuth.dev/agent": "shop"}
            }
        },
    ]


def _binding(**spec: Any) -> ToolBindingSpec:
    return ToolBindingSpec.model_validate({"agentRef": {"name": "shop"}, **spec})


TOOL = Owner("ToolBinding", "shop-web", NS, "u-2")


def test_a_tool_service_reaches_its_backend_only() -> None:
    web = _binding(
        type="web_search", webSearch={"url": "https://search.example.com", "allowExternal": True}
    )
    spec = tool_network_policy("shop-web-tool", TOOL, web, SETTINGS)["spec"]
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["egress"] == [DNS, {"to": ANYWHERE, "ports": [{"port": 443, "protocol": "TCP"}]}]
    assert (
        spec["ingress"][0]["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/instance"]
        == "shop"
    )

    sql = _binding(
        type="sql_query",
        sqlQuery={"connectionSecretRef": {"name": "db", "key": "uri"}, "allowedTables": ["t"]},
    )
    egress = tool_network_policy("shop-sql-tool", TOOL, sql, SETTINGS)["spec"]["egress"]
    assert egress == [DNS, {"to": ANYWHERE, "ports": [{"port": 5432, "protocol": "TCP"}]}]

    vector = _binding(
        type="vector_search",
        vectorSearch={
            "url": "http://qdrant.data.svc:6333",
            "collection": "c",
            "embedding": {"endpoint": "http://tei:8080/v1", "model": "bge"},
        },
    )
    tracing = effective_tracing(None, TracingDefaults(endpoint="http://10.9.9.9:4318"))
    egress = tool_network_policy("shop-vec-tool", TOOL, vector, SETTINGS, tracing)["spec"]["egress"]
    assert egress == [
        DNS,
        {"to": [_ns("data")]},
        {"to": [{"podSelector": {}}]},
        {
            "to": [{"ipBlock": {"cidr": "10.9.9.9/32"}}],
            "ports": [{"port": 4318, "protocol": "TCP"}],
        },
    ]

    embedded = _binding(
        type="vector_search", vectorSearch={"embedded": {"claimName": "store"}, "collection": "c"}
    )
    assert tool_network_policy("x-tool", TOOL, embedded, SETTINGS)["spec"]["egress"] == [DNS]


def test_nothing_may_connect_to_an_eval_run() -> None:
    schedule = Owner("EvalSchedule", "nightly", NS, "u-3")
    spec = eval_network_policy("nightly-eval", schedule, "shop")["spec"]
    assert spec == {
        "podSelector": {
            "matchLabels": {
                "app.kubernetes.io/name": "sleuth-eval",
                "app.kubernetes.io/instance": "nightly",
                "app.kubernetes.io/component": "eval",
            }
        },
        "policyTypes": ["Ingress"],
    }


def test_metrics_peers_are_admitted_to_agent_model_and_tool_ports() -> None:
    monitoring = parse_peers(
        '[{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]'
    )
    settings = RenderSettings(metrics_peers=monitoring)
    web = _binding(
        type="web_search", webSearch={"url": "https://search.example.com", "allowExternal": True}
    )
    for policy in (
        agent_network_policy(AGENT, _agent(), [Binding("shop-web", web)], settings),
        model_network_policy(AGENT, settings),
        tool_network_policy("shop-web-tool", TOOL, web, settings),
    ):
        assert policy["spec"]["ingress"][0]["from"][-1] == _ns("monitoring"), policy["metadata"][
            "name"
        ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not valid JSON"),
        ('{"podSelector": {}}', "expected a JSON list"),
        ('[{"namespace": "monitoring"}]', "expected a JSON list"),
        ("[{}]", "expected a JSON list"),
    ],
)
def test_bad_metrics_peers_are_refused_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_peers(text)
    assert parse_peers("") == []
