"""spec.approval of a ToolBinding: refused with the field named when contradictory, rendered into
the agent's configuration file (tools[].approval) as the operator writes it, and the approve
grant carried through spec.agent.access."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from sleuth.core.api.agent_config import ToolConfig, parse_agent_config
from sleuth.core.api.v1alpha1 import AgentDeploymentSpec, ToolBindingSpec
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.agent import Binding, render_agent

pytestmark = pytest.mark.unit

SETTINGS = RenderSettings(sleuth_image="ghcr.io/sleuth-dev/sleuth:0.1.0")
OWNER = Owner(kind="AgentDeployment", name="contracts", namespace="team-a", uid="uid-1")
WEB = {
    "agentRef": {"name": "contracts"},
    "type": "web_search",
    "webSearch": {"url": "http://searxng:8080", "allowExternal": True},
}
SQL = {
    "agentRef": {"name": "contracts"},
    "type": "sql_query",
    "sqlQuery": {
        "connectionSecretRef": {"name": "pg", "key": "uri"},
        "allowedTables": ["contracts", "hr.salaries"],
    },
}


def _binding(base: dict[str, Any], approval: dict[str, Any]) -> ToolBindingSpec:
    return ToolBindingSpec.model_validate({**base, "approval": approval})


@pytest.mark.parametrize(
    ("base", "approval", "message"),
    [
        (
            WEB,
            {"required": "always", "match": {"toolOutput": True}},
            r"spec\.approval\.match is required when required is onMatch, and forbidden when",
        ),
        (
            WEB,
            {"required": "onMatch"},
            r"spec\.approval\.match is required when required is onMatch",
        ),
        (WEB, {"required": "onMatch", "match": {}}, r"spec\.approval\.match: set toolOutput"),
        (
            WEB,
            {"required": "onMatch", "match": {"tables": ["contracts"]}},
            r"spec\.approval\.match\.tables is only for type sql_query \(this tool is web_search\)",
        ),
        (
            SQL,
            {"required": "onMatch", "match": {"tables": ["payroll"]}},
            r"spec\.approval\.match\.tables: payroll not in spec\.sqlQuery\.allowedTables",
        ),
        (WEB, {"required": "always", "timeoutSeconds": 0}, r"approval\.timeoutSeconds"),
        (WEB, {"required": "sometimes"}, r"approval\.required"),
    ],
)
def test_a_contradictory_approval_is_refused_naming_the_field(
    base: dict[str, Any], approval: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        _binding(base, approval)


def test_approval_reaches_the_agent_as_the_operator_renders_it() -> None:
    web = _binding(WEB, {"required": "onMatch", "match": {"toolOutput": True}})
    sql = _binding(SQL, {"required": "onMatch", "match": {"tables": ["hr.salaries"]}})
    plain = ToolBindingSpec.model_validate({**WEB, "name": "web_plain"})
    spec = AgentDeploymentSpec.model_validate(
        {
            "model": {"endpoint": "http://llama.models:8080/v1", "servedModelName": "llama"},
            "agent": {
                "access": {
                    "callers": [
                        {
                            "name": "portal",
                            "serviceAccount": {"name": "portal"},
                            "grants": ["trace", "approve"],
                        }
                    ]
                }
            },
        }
    )
    bindings = [Binding("web", web), Binding("sql", sql), Binding("web-plain", plain)]
    configmap = render_agent(OWNER, spec, bindings, SETTINGS)[0]
    text = configmap["data"]["config.yaml"]
    tools = {t["name"]: t for t in yaml.safe_load(text)["tools"]}
    assert tools["web_search"]["approval"] == {
        "required": "onMatch",
        "match": {"toolOutput": True},
        "timeoutSeconds": 300,
    }
    assert tools["sql_query"]["approval"]["match"] == {
        "toolOutput": False,
        "tables": ["hr.salaries"],
    }
    assert "approval" not in tools["web_plain"]
    config = parse_agent_config(text)  # the agent accepts what is rendered
    (portal,) = [c for c in config.access.callers if c.name == "portal"] if config.access else []
    assert portal.grants == ["trace", "approve"]


def test_the_file_refuses_tables_on_a_tool_that_runs_no_sql() -> None:
    with pytest.raises(ValidationError, match=r"tools\[web\]\.approval\.match\.tables"):
        ToolConfig.model_validate(
            {
                "name": "web",
                "type": "web_search",
                "approval": {"required": "onMatch", "match": {"tables": ["t"]}},
            }
        )
