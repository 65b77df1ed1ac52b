"""The operator's guard without a cluster: its allowlists come from its flags (its own images
always allowed), a Secret is used only when it opted in, and a rendered pod never reads a Secret
no check saw."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from sleuth.core.api.v1alpha1 import AgentDeploymentSpec, ToolBindingSpec
from sleuth.core.api.v1alpha1.access import AccessSpec
from sleuth.core.api.v1alpha1.secretuse import tool_secret_uses
from sleuth.core.errors import KubeRejected
from sleuth.core.kube import Kube
from sleuth.operator.accesscheck import check_key_secrets
from sleuth.operator.guard import (
    SecretVerdict,
    check_secret_uses,
    secrets_read,
    spec_refusal,
    unchecked_secrets,
)
from sleuth.operator.render.meta import Owner, RenderSettings
from sleuth.operator.render.tool import render_tool

pytestmark = pytest.mark.unit

ENDPOINT = {"endpoint": "http://vllm.models.svc:8000/v1", "servedModelName": "llama"}


def test_the_allowlist_flags_reach_the_render_settings() -> None:
    from sleuth.core.cli import build_parser
    from sleuth.operator.main import operator_settings

    args = build_parser("operator").parse_args(
        [
            "operator",
            "--allowed-hosts",
            "https://search.example.com, https://*.trusted.example",
            "--allowed-image-repositories",
            "registry.example.com/ml/*",
            "--cluster-domain",
            "corp.local",
        ]
    )
    render = operator_settings(args, environ={}).render
    assert render.allowlists.hosts == ("https://search.example.com", "https://*.trusted.example")
    assert render.allowlists.repositories == ("registry.example.com/ml/*",)
    assert render.allowlists.cluster_domain == render.cluster_domain == "corp.local"
    plain = operator_settings(build_parser("operator").parse_args(["operator"]), environ={}).render
    assert plain.allowlists.hosts == ()
    assert plain.allowlists.repositories == ("vllm/vllm-openai", "docker.io/vllm/vllm-openai")


def test_a_malformed_allowlist_flag_stops_the_operator() -> None:
    from sleuth.core.cli import build_parser

    args = build_parser("operator").parse_args(["operator", "--allowed-hosts", "search.example"])
    with pytest.raises(SystemExit, match=r"--allowed-\*: allowed host 'search\.example'"):
        args.func(args)


def test_the_operators_own_images_are_always_allowed() -> None:
    settings = RenderSettings(
        sleuth_image="registry.corp/sleuth:1", model_image="registry.corp/vllm@sha256:" + "0" * 64
    )
    settings = dataclasses.replace(
        settings, allowlists=dataclasses.replace(settings.allowlists, repositories=())
    )
    mine = AgentDeploymentSpec.model_validate(
        {"model": ENDPOINT, "agent": {"image": "registry.corp/sleuth:2"}}
    )
    assert spec_refusal(AgentDeploymentSpec, mine, settings) is None
    theirs = AgentDeploymentSpec.model_validate(
        {"model": ENDPOINT, "agent": {"image": "registry.corp/other:2"}}
    )
    refused = spec_refusal(AgentDeploymentSpec, theirs, settings)
    assert refused is not None
    assert refused.reason == "ImageNotAllowed"
    assert refused.message.startswith("spec.agent.image: repository registry.corp/other")


class Secrets(Kube):
    """A Kube whose only objects are Secrets (None: forbidden)."""

    def __init__(self, secrets: dict[str, dict[str, Any] | None]) -> None:
        super().__init__(object())
        self.secrets = secrets

    def get(self, resource: Any, namespace: str, name: str, sub: str | None = None) -> Any:
        if name in self.secrets and self.secrets[name] is None:
            raise KubeRejected(403, "forbidden", reason="Forbidden")
        return self.secrets.get(name)


def _secret(uses: str | None, key: str = "uri") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "db"}
    if uses is not None:
        meta["annotations"] = {"sleuth.dev/allowed-uses": uses}
    return {"metadata": meta, "data": {key: "c2VjcmV0"}}


SEARCH = ToolBindingSpec.model_validate(
    {
        "agentRef": {"name": "a"},
        "type": "web_search",
        "webSearch": {
            "url": "http://searxng.search.svc:8080",
            "allowExternal": True,
            "apiKeySecretRef": {"name": "db", "key": "uri"},
        },
    }
)


@pytest.mark.parametrize(
    ("secret", "reason", "text"),
    [
        (_secret("ToolBinding/sql_query"), "SecretNotAllowed", "add ToolBinding/web_search"),
        (_secret(None), "SecretNotAllowed", "annotation sleuth.dev/allowed-uses"),
        (_secret("ToolBinding/web_search", key="other"), "SecretNotFound", "has no key uri"),
        (None, "SecretUnverifiable", "may not read Secrets in namespace team-a"),
    ],
)
def test_a_secret_that_did_not_opt_in_is_not_used(
    secret: dict[str, Any] | None, reason: str, text: str
) -> None:
    verdict = check_secret_uses(Secrets({"db": secret}), "team-a", tool_secret_uses(SEARCH))
    refusal = verdict.refusal()
    assert refusal is not None
    assert refusal.reason == reason
    assert refusal.message.startswith("spec.webSearch.apiKeySecretRef: Secret db")
    assert text in refusal.message
    assert verdict.checked == set()


def test_a_secret_that_opted_in_is_used() -> None:
    for uses in (
        "ToolBinding/web_search",
        "ToolBinding",
        "AgentDeployment, ToolBinding/web_search",
    ):
        verdict = check_secret_uses(
            Secrets({"db": _secret(uses)}), "team-a", tool_secret_uses(SEARCH)
        )
        assert verdict.refusal() is None
        assert verdict.checked == {"db"}


def test_no_rendered_pod_reads_a_secret_no_check_saw() -> None:
    owner = Owner(kind="ToolBinding", name="search", namespace="team-a", uid="u")
    manifests = render_tool(owner, SEARCH, RenderSettings(), None)
    assert set().union(*(secrets_read(m) for m in manifests)) == {"db"}
    assert unchecked_secrets(manifests, {"db"}) is None
    stray = unchecked_secrets(manifests, set())
    assert stray is not None
    assert "would read Secret db" in stray.message
    volume = {"volumes": [{"name": "v", "secret": {"secretName": "tls"}}]}
    projected = {"sources": [{"secret": {"name": "ca"}}], "envFrom": [{"secretRef": {"name": "e"}}]}
    assert secrets_read([volume, projected]) == {"tls", "ca", "e"}


def test_every_secret_a_rendered_pod_reads_is_one_the_reconciler_checks() -> None:
    """With every Secret reference of each kind set (each to its own Secret), the Secrets the
    rendered pods read are exactly those the reconcilers check, derived uses included."""
    from sleuth.core.api.v1alpha1 import EvalScheduleSpec
    from sleuth.core.api.v1alpha1.secretuse import agent_secret_uses, eval_secret_uses
    from sleuth.operator.guard import agent_uses
    from sleuth.operator.render.agent import render_agent
    from sleuth.operator.render.evalschedule import EvalTarget, render_eval_cronjob
    from sleuth.operator.render.model import render_model

    def ref(name: str) -> dict[str, str]:
        return {"name": name, "key": "k"}

    judge = {"endpoint": "http://judge.evals.svc/v1", "model": "j", "apiKeySecretRef": ref("oj")}
    agent = AgentDeploymentSpec.model_validate(
        {
            "model": {"name": "meta-llama/Llama-3.1-8B-Instruct", "tokenSecretRef": ref("hf")},
            "agent": {
                "tracing": {
                    "endpoint": "http://otel.obs.svc:4318",
                    "headersSecretRef": ref("otel"),
                },
                "onlineEval": {"judge": judge},
            },
        }
    )
    owner = Owner(kind="AgentDeployment", name="a", namespace="team-a", uid="u")
    settings = RenderSettings()
    pods = render_model(owner, agent.model, settings) + render_agent(owner, agent, [], settings)
    checked = {u.ref.name for u in agent_secret_uses(agent)}
    assert set().union(*(secrets_read(m) for m in pods)) == checked == {"hf", "otel", "oj"}

    keyed = AgentDeploymentSpec.model_validate(
        {
            "model": {**ENDPOINT, "apiKeySecretRef": ref("model-key")},
            "agent": {"tracing": agent.agent.tracing.to_wire()},
        }
    )
    pods = render_agent(owner, keyed, [], settings)
    assert set().union(*(secrets_read(m) for m in pods)) == {
        u.ref.name for u in agent_secret_uses(keyed)
    }
    schedule = EvalScheduleSpec.model_validate(
        {
            "agentRef": {"name": "a"},
            "schedule": "0 * * * *",
            "dataset": {"configMapRef": {"name": "d", "key": "g.jsonl"}},
            # TSA asks the agent's model with its key: the tsa container reads it
            "metrics": ["faithfulness", "toolSelectionAccuracy"],
            "toolSelection": {"configMapRef": {"name": "t", "key": "tsa.jsonl"}},
            "judge": {**judge, "apiKeySecretRef": ref("judge")},
        }
    )
    target = EvalTarget(
        agent="a",
        model_endpoint="http://vllm.models.svc:8000/v1",
        model="llama",
        model_api_key=keyed.model.api_key_secret_ref,
        tracing=keyed.agent.tracing,
    )
    owner = Owner(kind="EvalSchedule", name="e", namespace="team-a", uid="v")
    job = render_eval_cronjob(owner, schedule, target, settings)
    uses = eval_secret_uses(schedule) + agent_uses("a", target.model_api_key, target.tracing)
    assert secrets_read(job) == {u.ref.name for u in uses} == {"judge", "model-key", "otel"}


def _keys(name: str, uses: str | None, data: dict[str, str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if uses is not None:
        meta["annotations"] = {"sleuth.dev/allowed-uses": uses}
    return {"metadata": meta, "data": data}


def test_every_caller_key_secret_that_cannot_be_used_is_reported_naming_its_field() -> None:
    """Missing, unreadable (403), not opted in, empty: each is on the status with the caller's
    field; only the usable one is checked, and the refusal keeps the agent from rendering."""
    callers = [{"name": f"c{i}", "apiKeySecretRef": {"name": f"keys-{i}"}} for i in range(5)] + [
        {"name": "portal", "serviceAccount": {"name": "portal"}}
    ]
    access = AccessSpec.model_validate({"callers": callers})
    secrets = Secrets(
        {
            "keys-0": _keys("keys-0", "AgentDeployment/caller-api-keys", {"k": "a2V5"}),
            # keys-1 is missing
            "keys-2": None,  # the operator may not read it
            "keys-3": _keys("keys-3", "ToolBinding/web_search", {"k": "a2V5"}),
            "keys-4": _keys("keys-4", "AgentDeployment", {}),
        }
    )
    verdict = check_key_secrets(secrets, "team-a", access, SecretVerdict())
    assert verdict.checked == {"keys-0"}
    assert verdict.missing == [
        "spec.agent.access.callers[1].apiKeySecretRef: Secret keys-1 not found (the agent's pods "
        "cannot start)",
        "spec.agent.access.callers[4].apiKeySecretRef: Secret keys-4 holds no key (its caller is "
        "refused)",
    ]
    assert verdict.unverifiable == [
        "spec.agent.access.callers[2].apiKeySecretRef: Secret keys-2 is not used: the operator "
        "may not read Secrets in namespace team-a, so it cannot tell whether the Secret allows "
        "AgentDeployment/caller-api-keys"
    ]
    (not_allowed,) = verdict.not_allowed
    assert not_allowed.startswith("spec.agent.access.callers[3].apiKeySecretRef: Secret keys-3")
    assert "add AgentDeployment/caller-api-keys" in not_allowed
    refusal = verdict.refusal()
    assert refusal is not None
    assert refusal.reason == "SecretNotAllowed"  # the worst first, every problem in the message
    assert "callers[1]" in refusal.message
    assert "callers[2]" in refusal.message
    assert "a2V5" not in refusal.message  # never a key


def test_a_jwks_url_outside_the_allowlist_is_refused_before_anything_is_rendered() -> None:
    spec = AgentDeploymentSpec.model_validate(
        {
            "model": ENDPOINT,
            "agent": {
                "access": {
                    "issuers": [
                        {"issuer": "https://idp.example", "jwksUrl": "https://idp.example/keys"}
                    ]
                }
            },
        }
    )
    refused = spec_refusal(AgentDeploymentSpec, spec, RenderSettings())
    assert refused is not None
    assert refused.reason == "EndpointNotAllowed"
    assert refused.message.startswith("spec.agent.access.issuers[0].jwksUrl: not an allowed")
    settings = RenderSettings()
    allowed = dataclasses.replace(
        settings,
        allowlists=dataclasses.replace(settings.allowlists, hosts=("https://idp.example",)),
    )
    assert spec_refusal(AgentDeploymentSpec, spec, allowed) is None
