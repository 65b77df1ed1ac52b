"""The agent's route to the API server (for the cluster issuer's JWKS): rendered only for an
agent that admits ServiceAccount tokens, only when the operator knows the endpoints; and how the
operator learns them (flags, EndpointSlice default/kubernetes)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from sleuth.core.api.v1alpha1 import AgentDeploymentSpec
from sleuth.operator.apiserver import slice_api_server
from sleuth.operator.reconcile_agent import _api_server_unknown
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.agent import agent_config
from sleuth.operator.render.meta import ApiServer
from sleuth.operator.render.netpol_agent import agent_network_policy, api_server_unknown
from sleuth.operator.settings import api_server_from_flags
from sleuth.operator.status import Cond

pytestmark = pytest.mark.unit

AGENT = Owner("AgentDeployment", "shop", "team-a", "u-1")
SERVER = ApiServer(cidrs=("10.0.0.10/32", "10.0.0.11/32"), port=6443)
KNOWN = RenderSettings(api_server=SERVER)
UNKNOWN = RenderSettings()
RULE = {
    "to": [{"ipBlock": {"cidr": "10.0.0.10/32"}}, {"ipBlock": {"cidr": "10.0.0.11/32"}}],
    "ports": [{"port": 6443, "protocol": "TCP"}],
}
SA_CALLER = {"name": "portal", "serviceAccount": {"name": "portal"}}
KEY_CALLER = {"name": "ops", "apiKeySecretRef": {"name": "ops-keys"}}


def _spec(*callers: dict[str, Any], admit_evals: bool = True) -> AgentDeploymentSpec:
    access = {"admitEvalSchedules": admit_evals, "callers": list(callers)}
    return AgentDeploymentSpec.model_validate(
        {"model": {"name": "Qwen/Qwen2.5-7B-Instruct"}, "agent": {"access": access}}
    )


def _egress(spec: AgentDeploymentSpec, settings: RenderSettings, evals: list[str]) -> Any:
    return agent_network_policy(AGENT, spec, [], settings, evals)["spec"]["egress"]


@pytest.mark.parametrize(
    ("spec", "evals"),
    [
        (_spec(SA_CALLER), []),  # a ServiceAccount caller
        (_spec(KEY_CALLER), ["nightly"]),  # its EvalSchedule's Job
    ],
)
def test_an_agent_that_admits_service_accounts_reaches_the_api_server_endpoints(
    spec: AgentDeploymentSpec, evals: list[str]
) -> None:
    assert RULE in _egress(spec, KNOWN, evals)
    issuers = agent_config(AGENT, spec, [], KNOWN, evals).access.issuers
    assert [i.service_accounts for i in issuers] == [True]


@pytest.mark.parametrize(
    ("spec", "evals"),
    [
        (_spec(KEY_CALLER), []),  # keys only, no EvalSchedule
        (_spec(KEY_CALLER, admit_evals=False), ["nightly"]),  # its eval Jobs not admitted
    ],
)
def test_an_agent_that_admits_no_service_account_neither_trusts_nor_reaches_the_cluster_issuer(
    spec: AgentDeploymentSpec, evals: list[str]
) -> None:
    egress = _egress(spec, KNOWN, evals)
    assert not [r for r in egress if any("ipBlock" in p for p in r.get("to", []))
                and {"port": 6443, "protocol": "TCP"} in r.get("ports", [])]  # fmt: skip
    assert agent_config(AGENT, spec, [], KNOWN, evals).access.issuers == []
    assert api_server_unknown(agent_config(AGENT, spec, [], UNKNOWN, evals).access, UNKNOWN) is None


def test_unknown_endpoints_render_no_route_and_say_so_on_degraded() -> None:
    spec = _spec(SA_CALLER)
    assert RULE not in _egress(spec, UNKNOWN, ["nightly"])
    assert _egress(spec, UNKNOWN, ["nightly"]) == [
        r for r in _egress(spec, KNOWN, ["nightly"]) if r != RULE
    ]
    why = api_server_unknown(agent_config(AGENT, spec, [], UNKNOWN, ["nightly"]).access, UNKNOWN)
    assert why is not None
    assert "networkPolicy.apiServer" in why
    assert why.endswith("callers eval-nightly, portal")
    fine = [Cond("Ready", "True", "Ready", "ok"), Cond("Degraded", "False", "AsExpected", "-")]
    degraded = _api_server_unknown(fine, why)[1]
    assert (degraded.status, degraded.reason, degraded.message) == ("True", "APIServerUnknown", why)
    stuck = Cond("Degraded", "True", "ProgressDeadlineExceeded", "stuck")
    assert _api_server_unknown([stuck], why) == [stuck]  # a stuck rollout says more
    assert _api_server_unknown(fine, None) == fine


def test_the_endpoint_slice_gives_its_ready_addresses_on_the_https_port() -> None:
    endpoint_slice = {
        "addressType": "IPv4",
        "endpoints": [
            {"addresses": ["10.0.0.11"], "conditions": {"ready": True}},
            {"addresses": ["10.0.0.10"]},
            {"addresses": ["10.0.0.12"], "conditions": {"ready": False}},
        ],
        "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}],
    }
    assert slice_api_server(endpoint_slice) == SERVER
    assert slice_api_server({**endpoint_slice, "endpoints": []}) is None
    assert slice_api_server({**endpoint_slice, "ports": []}) is None
    v6 = {"endpoints": [{"addresses": ["fd00::1"]}], "ports": [{"port": 443}]}
    assert slice_api_server(v6) == ApiServer(cidrs=("fd00::1/128",), port=443)


def test_the_flags_name_the_endpoints_together_or_not_at_all() -> None:
    assert api_server_from_flags([], None) is None
    assert api_server_from_flags(["10.0.0.10", "10.0.0.11/32", "10.0.0.10/32"], 6443) == SERVER
    for cidrs, port, said in (
        (["10.0.0.10/32"], None, "--api-server-cidr and --api-server-port go together"),
        ([], 6443, "--api-server-cidr and --api-server-port go together"),
        (["kubernetes"], 6443, "--api-server-cidr: 'kubernetes' is not an IP address range"),
        (["10.0.0.10/32"], 0, "--api-server-port: 0 is not a port"),
    ):
        with pytest.raises(ValueError, match=said):
            api_server_from_flags(cidrs, port)


def test_the_settings_carry_no_endpoints_unless_told() -> None:
    assert RenderSettings().api_server is None
    assert dataclasses.replace(UNKNOWN, api_server=SERVER) == KNOWN
