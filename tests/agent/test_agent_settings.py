"""Settings from the environment and tools built from the configuration file."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from sleuth.agent.errors import ToolConfigError
from sleuth.agent.settings import AgentSettings
from sleuth.agent.toolset import bind_tools
from sleuth.core.api.agent_config import AgentConfig
from sleuth.core.tools import DEFAULT_SPECS
from sleuth.tools.local import LocalTool
from sleuth.tools.remote import RemoteTool

pytestmark = pytest.mark.unit

CONFIG = {
    "model": {"endpoint": "http://vllm:8000/v1", "servedModelName": "llama"},
    "toolCacheTTLSeconds": 60,
    "tools": [
        {
            "name": "sql_query",
            "type": "custom",
            "factory": "tests.agent.agent_doubles:seed_sql_factory",
            "description": "Counts and sums over contracts. NOT for clauses.",
            "timeoutSeconds": 3,
        }
    ],
}


def test_settings_read_a_mounted_file_and_env_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(json.dumps(CONFIG))
    monkeypatch.setenv("SLEUTH_AGENT_CONFIG", str(path))
    monkeypatch.setenv("SLEUTH_AGENT_MODEL_NAME", "qwen")
    monkeypatch.setenv("SLEUTH_AGENT_PORT", "9090")
    settings = AgentSettings()
    config = settings.load_config()
    assert settings.port == 9090
    assert config.model.served_model_name == "qwen"
    assert str(config.model.endpoint) == "http://vllm:8000/v1"


def test_settings_inline_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLEUTH_AGENT_CONFIG_JSON", json.dumps({**CONFIG, "maxIterations": 3}))
    assert AgentSettings().load_config().max_iterations == 3


def test_factory_tool_is_bound_with_its_limits_and_description() -> None:
    bound = bind_tools(AgentConfig.model_validate(CONFIG))["sql_query"]
    assert bound.timeout_s == 3
    assert bound.cache_ttl_s == 60
    assert bound.tool.spec.description == "Counts and sums over contracts. NOT for clauses."
    assert bound.tool.spec.parameters["required"] == ["query"]


def test_unimportable_factory_names_the_tool() -> None:
    broken = {**CONFIG, "tools": [{**CONFIG["tools"][0], "factory": "nowhere:build"}]}  # type: ignore[dict-item]
    with pytest.raises(ToolConfigError, match=r"tools\[sql_query\]: cannot import nowhere:build"):
        bind_tools(AgentConfig.model_validate(broken))


def test_built_in_tools_come_from_the_tools_distribution_without_import_strings() -> None:
    """No factory: an endpoint gives a tool service's client, none the in-process tool; both
    builders are imported by the agent, so nothing is looked up by name."""
    with socket.socket() as sock:  # a port nothing listens on: the remote tool falls back to
        sock.bind(("127.0.0.1", 0))  # its type's default spec
        port = sock.getsockname()[1]
    config = {
        **CONFIG,
        "tools": [
            {"name": "vector_search", "type": "vector_search"},
            {"name": "web_search", "type": "web_search", "endpoint": f"http://127.0.0.1:{port}"},
        ],
    }
    bound = bind_tools(AgentConfig.model_validate(config))
    assert isinstance(bound["vector_search"].tool, LocalTool)
    assert isinstance(bound["web_search"].tool, RemoteTool)
    assert bound["web_search"].tool.spec.parameters == DEFAULT_SPECS["web_search"].parameters
