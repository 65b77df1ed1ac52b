"""The chart's alerts pass promtool, and the operator serves the metrics its Service points at."""

from __future__ import annotations

import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest
import yaml

from sleuth.core.process import free_port
from tests.charts.chart_testkit import VALUE_SETS, documents, find, template

pytestmark = pytest.mark.integration


def test_prometheus_rule_passes_promtool(helm: Path, tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: `make promtool` installs Debian's prometheus package"
    (rule,) = find(documents(template(helm, VALUE_SETS["monitoring"])), "PrometheusRule")
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    proc = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 5 rules found" in proc.stdout


def test_operator_metrics_endpoint_serves_what_the_service_scrapes() -> None:
    from prometheus_client import CollectorRegistry

    from sleuth.operator.loop.metrics import serve

    port = free_port()
    serve(port, "127.0.0.1", registry=CollectorRegistry())
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    assert response.status == 200
    assert 'sleuth_operator_info{version="' in text
