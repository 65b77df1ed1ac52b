"""spec.agent.onlineEval reaches the agent: its config file, its name and the judge's key."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from sleuth.agent.onlineeval import judge_config
from sleuth.core.api.agent_config import parse_agent_config
from sleuth.core.api.v1alpha1 import AgentDeploymentSpec
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.agent import JUDGE_API_KEY_ENV, render_agent

pytestmark = pytest.mark.unit

SETTINGS = RenderSettings(sleuth_image="ghcr.io/sleuth-dev/sleuth:0.1.0")
OWNER = Owner(kind="AgentDeployment", name="contracts", namespace="team-a", uid="uid-1")
MODEL = {"endpoint": "http://vllm.models:8000/v1", "servedModelName": "llama"}


def _render(agent: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    spec = AgentDeploymentSpec.model_validate({"model": MODEL, "agent": agent})
    configmap, deployment, _ = render_agent(OWNER, spec, [], SETTINGS)
    config = yaml.safe_load(configmap["data"]["config.yaml"])
    env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    return config, env


def test_defaults_sample_five_percent_and_name_the_agent() -> None:
    config, env = _render({})
    online = config["onlineEval"]
    assert online["sampleRate"] == 0.05
    assert "judge" not in online  # the agent asks its own model server
    assert online["embeddings"] == {"source": "local", "model": "embedding"}
    assert {"name": "SLEUTH_AGENT_NAME", "value": "contracts"} in env
    assert not [e for e in env if e["name"] == JUDGE_API_KEY_ENV]
    judge = judge_config(parse_agent_config(yaml.safe_dump(config)))
    assert (judge.base_url, judge.model) == ("http://vllm.models:8000/v1", "llama")


def test_judge_embeddings_and_limits_are_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    config, env = _render(
        {
            "onlineEval": {
                "sampleRate": 0.2,
                "judge": {
                    "endpoint": "http://judge.models:8000/v1",
                    "model": "qwen-judge",
                    "apiKeySecretRef": {"name": "judge-key", "key": "token"},
                },
                "embeddings": {"source": "endpoint", "endpoint": "http://tei.models/v1"},
                "queueSize": 10,
                "concurrency": 3,
                "window": 20,
                "timeoutSeconds": 15,
            }
        }
    )
    online = config["onlineEval"]
    assert online["judge"] == {
        "endpoint": "http://judge.models:8000/v1",
        "model": "qwen-judge",
        "apiKeyEnv": JUDGE_API_KEY_ENV,
    }
    assert (online["queueSize"], online["concurrency"], online["window"]) == (10, 3, 20)
    key_env = next(e for e in env if e["name"] == JUDGE_API_KEY_ENV)
    assert key_env["valueFrom"]["secretKeyRef"] == {"name": "judge-key", "key": "token"}

    monkeypatch.setenv(JUDGE_API_KEY_ENV, "s3cret")
    judge = judge_config(parse_agent_config(yaml.safe_dump(config)))
    assert (judge.base_url, judge.model, judge.api_key) == (
        "http://judge.models:8000/v1",
        "qwen-judge",
        "s3cret",
    )
    assert judge.embeddings_base_url == "http://tei.models/v1"
    assert (judge.timeout_s, judge.concurrency) == (15.0, 3)


def test_embeddings_endpoint_only_with_its_source() -> None:
    with pytest.raises(ValidationError, match=r"onlineEval\.embeddings\.endpoint"):
        AgentDeploymentSpec.model_validate(
            {"model": MODEL, "agent": {"onlineEval": {"embeddings": {"source": "endpoint"}}}}
        )


def test_old_field_is_refused() -> None:
    with pytest.raises(ValidationError, match="onlineEvalSampleRate"):
        AgentDeploymentSpec.model_validate({"model": MODEL, "agent": {"onlineEvalSampleRate": 0.1}})
