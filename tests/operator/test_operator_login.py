"""kopf connects with the reconcilers' credentials (sleuth.operator.loop.login)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sleuth.core.kube import new_api_client
from sleuth.operator.loop.login import connection_info

pytestmark = pytest.mark.unit


def test_kopf_gets_the_server_token_and_tls_settings_of_the_client(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("a CA bundle")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "c",
                "cluster": {"server": "https://api:6443", "certificate-authority": str(ca)},
            }
        ],
        "users": [{"name": "u", "user": {"token": "t0ken"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    path = tmp_path / "kubeconfig.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    info = connection_info(new_api_client(str(path)).configuration, trust_env=True)
    assert (info.server, info.scheme, info.token) == ("https://api:6443", "Bearer", "t0ken")
    assert info.ca_path == str(ca)
    assert info.insecure is False
    assert info.trust_env is True
    assert (info.certificate_path, info.private_key_path) == (None, None)


def test_handlers_register_the_login() -> None:
    """With a login handler of its own, kopf uses none of its fallbacks (which look in-cluster
    first, whatever --kubeconfig says)."""
    import kopf

    from sleuth.operator import handlers

    registered = kopf.get_default_registry()._activities.get_all_handlers()
    logins = [
        h
        for h in registered
        if h.activity is not None and h.activity.value == "authentication" and not h._fallback
    ]
    assert [h.fn for h in logins] == [handlers.login]
