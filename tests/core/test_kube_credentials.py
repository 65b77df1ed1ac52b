"""sleuth.core.kube finds credentials in one order: --kubeconfig, in-cluster, $KUBECONFIG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sleuth.core.errors import ConfigError
from sleuth.core.kube import new_api_client

pytestmark = pytest.mark.unit


def _kubeconfig(path: Path, server: str) -> str:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t0ken"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return str(path)


@pytest.fixture
def in_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A pod's environment: the service host and a mounted ServiceAccount token."""
    from kubernetes.config import incluster_config

    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("pod-token")
    ca.write_text("not checked until a request is made")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(ca))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")


def _host(api: Any) -> str:
    return str(api.configuration.host)


def test_an_explicit_kubeconfig_wins_even_in_a_pod(tmp_path: Path, in_cluster: None) -> None:
    explicit = _kubeconfig(tmp_path / "explicit.yaml", "https://explicit:6443")
    assert _host(new_api_client(explicit)) == "https://explicit:6443"


def test_the_client_keeps_a_connection_for_each_thread_it_is_told_of(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "explicit.yaml", "https://explicit:6443")
    wide = new_api_client(path, connections=64)
    assert wide.configuration.connection_pool_maxsize == 64
    assert wide.rest_client.pool_manager.connection_pool_kw["maxsize"] == 64
    assert new_api_client(path).configuration.connection_pool_maxsize >= 1


def test_in_a_pod_the_service_account_wins_over_kubeconfig_env(
    tmp_path: Path, in_cluster: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", _kubeconfig(tmp_path / "env.yaml", "https://env:6443"))
    api = new_api_client(None)
    assert _host(api) == "https://10.0.0.1:443"
    assert api.configuration.get_api_key_with_prefix("BearerToken").lower() == "bearer pod-token"


def test_outside_a_pod_kubeconfig_env_is_read_at_call_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", _kubeconfig(tmp_path / "env.yaml", "https://env:6443"))
    assert _host(new_api_client(None)) == "https://env:6443"


def test_no_credentials_is_a_config_error_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubernetes.config import incluster_config

    # a pod without a mounted token (automountServiceAccountToken: false)
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(tmp_path / "no-token"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(ConfigError, match="no Kubernetes credentials"):
        new_api_client(None)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent.yaml"))
    with pytest.raises(ConfigError, match="no Kubernetes credentials"):
        new_api_client(None)
    with pytest.raises(ConfigError, match="no Kubernetes credentials"):
        new_api_client(str(tmp_path / "absent.yaml"))
