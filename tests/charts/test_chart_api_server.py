"""The chart's networkPolicy.apiServer: the API server's endpoints named (flags, no Role), or
read by the operator from EndpointSlice default/kubernetes (a Role on that one object)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from sleuth.core.cli import build_parser
from sleuth.operator.settings import api_server_from_flags
from tests.charts.chart_testkit import CHART, documents, find, operator_args, run_helm, template
from tests.support.paths import ROOT

ROLE = "sleuth-operator-api-server-endpoints"


def test_by_default_the_operator_may_read_only_the_kubernetes_endpoint_slice(helm: Path) -> None:
    docs = documents(template(helm))
    (role,) = find(docs, "Role", ROLE)
    assert role["metadata"]["namespace"] == "default"
    assert role["rules"] == [
        {
            "apiGroups": ["discovery.k8s.io"],
            "resources": ["endpointslices"],
            "resourceNames": ["kubernetes"],
            "verbs": ["get"],
        }
    ]
    (binding,) = find(docs, "RoleBinding", ROLE)
    assert binding["metadata"]["namespace"] == "default"
    assert binding["roleRef"]["name"] == ROLE
    assert not [a for a in operator_args(docs) if a.startswith("--api-server")]


def test_named_endpoints_become_the_operators_flags_and_no_role(helm: Path) -> None:
    sets = [
        "networkPolicy.apiServer.cidrs={10.0.0.10/32,10.0.0.11/32}",
        "networkPolicy.apiServer.port=6443",
    ]
    docs = documents(template(helm, None, *sets))
    assert find(docs, "Role", ROLE) == []
    assert find(docs, "RoleBinding", ROLE) == []
    args = build_parser("operator").parse_args(operator_args(docs))
    server = api_server_from_flags(args.api_server_cidr, args.api_server_port)
    assert server is not None
    assert server.cidrs == ("10.0.0.10/32", "10.0.0.11/32")
    assert server.port == 6443


@pytest.mark.parametrize(
    ("sets", "said"),
    [
        (
            ["networkPolicy.apiServer.cidrs={10.0.0.10/32}"],
            "networkPolicy.apiServer.port: required",
        ),
        (["networkPolicy.apiServer.port=6443"], "networkPolicy.apiServer.cidrs: required"),
        (["networkPolicy.apiServer.cidrs={kubernetes}"], "/networkPolicy/apiServer/cidrs/0"),
        (["networkPolicy.apiServer.port=70000"], "/networkPolicy/apiServer/port"),
    ],
)
def test_half_or_wrong_endpoints_are_refused_naming_the_value(
    helm: Path, sets: list[str], said: str
) -> None:
    args = [a for s in sets for a in ("--set", s)]
    proc = run_helm(helm, "template", "x", str(CHART), *args, check=False)
    assert proc.returncode != 0
    assert said in proc.stderr


def test_the_install_guides_api_server_values_render(helm: Path, tmp_path: Path) -> None:
    """docs/install.md's networkPolicy.apiServer block, as a values file."""
    text = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "# api-server.yaml" in b]
    values = tmp_path / "api-server.yaml"
    values.write_text(textwrap.dedent(block), encoding="utf-8")
    docs = documents(template(helm, values))
    args = build_parser("operator").parse_args(operator_args(docs))
    assert (args.api_server_cidr, args.api_server_port) == (["10.0.0.0/28"], 6443)
