"""Process settings of the agent service, from the environment (pydantic-settings).

``SLEUTH_AGENT_CONFIG``       path of the mounted configuration file (YAML/JSON, see
                              :mod:`sleuth.core.api.agent_config`); default
                              ``/etc/sleuth/agent.yaml``
``SLEUTH_AGENT_CONFIG_JSON``  the configuration inline, instead of a file
``SLEUTH_AGENT_NAME``         the agent's name: metrics label and the model id of /v1/models
``SLEUTH_AGENT_HOST``/``_PORT`` where to listen (default 0.0.0.0:8080 when the file configures
                              ``access``, else 127.0.0.1: see :func:`listen_host`)
``SLEUTH_AGENT_MODEL_ENDPOINT``/``_MODEL_NAME`` override the file's model endpoint and name
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from sleuth.core.api.agent_config import AgentConfig, load_agent_config, parse_agent_config
from sleuth.core.errors import ConfigError


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class AgentSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SLEUTH_AGENT_", extra="ignore")

    config: Path = Field(default=Path("/etc/sleuth/agent.yaml"))
    config_json: str | None = None
    name: str = "sleuth-agent"
    host: str | None = None
    port: int = Field(default=8080, ge=1, le=65535)
    model_endpoint: str | None = None
    model_name: str | None = None

    def listen_host(self, config: AgentConfig) -> str:
        """Where to listen: without ``access`` nobody is identified, so only loopback (a
        ``ConfigError`` naming ``access`` for another address); with it, all addresses unless
        ``SLEUTH_AGENT_HOST`` says otherwise."""
        if config.access is not None:
            return self.host or "0.0.0.0"
        host = self.host or "127.0.0.1"
        if not _loopback(host):
            raise ConfigError(
                f"SLEUTH_AGENT_HOST={host}: the configuration has no `access`, so every client "
                "would be served unidentified; listen on loopback (127.0.0.1) or configure "
                'access (docs/agent.md, "Who may ask the agent")'
            )
        return host

    def load_config(self) -> AgentConfig:
        """The configuration file (or inline JSON), with the environment's model overrides."""
        if self.config_json:
            config = parse_agent_config(self.config_json)
        else:
            config = load_agent_config(self.config)
        overrides: dict[str, str] = {}
        if self.model_endpoint:
            overrides["endpoint"] = self.model_endpoint
        if self.model_name:
            overrides["served_model_name"] = self.model_name
        if overrides:
            model = config.model.model_validate({**config.model.model_dump(), **overrides})
            config = config.model_copy(update={"model": model})
        return config
