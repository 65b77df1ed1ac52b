"""spec.agent.a2a: rendered into the agent's configuration file (the card names the in-cluster
URL of the agent Service), and the card's URL the status reports."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from sleuth.core.api.agent_config import parse_agent_config
from sleuth.core.api.v1alpha1 import AgentDeploymentSpec
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.agent import agent_card_url, render_agent

pytestmark = pytest.mark.unit

SETTINGS = RenderSettings(sleuth_image="ghcr.io/sleuth-dev/sleuth:0.1.0")
OWNER = Owner(kind="AgentDeployment", name="contracts", namespace="team-a", uid="uid-1")
MODEL = {"endpoint": "http://llama.models:8080/v1", "servedModelName": "qwen"}


def _spec(agent: dict[str, Any]) -> AgentDeploymentSpec:
    return AgentDeploymentSpec.model_validate({"model": MODEL, "agent": agent})


def _a2a(agent: dict[str, Any]) -> dict[str, Any]:
    text = render_agent(OWNER, _spec(agent), [], SETTINGS)[0]["data"]["config.yaml"]
    assert parse_agent_config(text).a2a is not None  # the agent accepts what is rendered
    a2a: dict[str, Any] = yaml.safe_load(text)["a2a"]
    return a2a


def test_a2a_is_on_by_default_and_names_the_agent_service() -> None:
    assert _a2a({}) == {
        "enabled": True,
        "publicUrl": "http://contracts-agent.team-a.svc:8080/",
        "taskTtlSeconds": 3600,
        "maxStoredTasks": 1000,
    }
    assert (
        agent_card_url(OWNER, _spec({}), SETTINGS)
        == "http://contracts-agent.team-a.svc:8080/.well-known/agent-card.json"
    )


def test_a2a_off_leaves_no_card_url_and_a_description_reaches_the_card() -> None:
    assert _a2a({"a2a": {"enabled": False}})["enabled"] is False
    assert agent_card_url(OWNER, _spec({"a2a": {"enabled": False}}), SETTINGS) is None
    described = _a2a({"a2a": {"description": "Answers contract questions."}})
    assert described["description"] == "Answers contract questions."


def test_an_unknown_a2a_key_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"a2a\.colour"):
        _spec({"a2a": {"colour": "red"}})
