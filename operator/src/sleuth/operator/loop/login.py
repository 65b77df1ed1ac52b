"""kopf's own connection to the API server, made from the operator's client.

Without a login handler kopf finds credentials itself, in another order than
:func:`sleuth.core.kube.new_api_client` (in-cluster first, even with ``--kubeconfig``), so its
watches and the reconcilers' writes could reach the cluster as two identities. The handler in
:mod:`sleuth.operator.handlers` hands kopf the credentials of the reconcilers' ``ApiClient``.
"""

from __future__ import annotations

from typing import Any

import kopf


def connection_info(configuration: Any, trust_env: bool = False) -> kopf.ConnectionInfo:
    """The server, CA, client certificate and token of a ``kubernetes.client.Configuration``.

    The token is read through the configuration's hooks, so a rotated ServiceAccount token or an
    exec plugin's fresh one is what kopf gets when it logs in again after a 401.
    """
    header = configuration.get_api_key_with_prefix(
        "BearerToken"
    ) or configuration.get_api_key_with_prefix("authorization")
    parts = header.split(" ", 1) if header else []
    scheme, token = (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0] if parts else None)
    return kopf.ConnectionInfo(
        server=configuration.host,
        ca_path=configuration.ssl_ca_cert,
        insecure=not configuration.verify_ssl,
        username=configuration.username or None,
        password=configuration.password or None,
        scheme=scheme,
        token=token,
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
        trust_env=trust_env,
    )


__all__ = ["connection_info"]
