"""Reconcile metrics, scraped from `--metrics-port` of the operator run as a host process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.operator.eval_metrics_kit import metered_operator
from tests.operator.operator_testkit import OperatorProcess
from tests.support.metrics import Samples, scrape
from tests.support.paths import EXAMPLES
from tests.support.polling import eventually

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


@pytest.fixture
def metered(
    kube: Any, namespace: str, crds: None, tmp_path: Path
) -> Iterator[tuple[OperatorProcess, int]]:
    with metered_operator(kube, namespace, tmp_path / "operator.log") as running:
        yield running


def ready_gauges(samples: Samples, namespace: str) -> dict[tuple[str, str], float]:
    """``(kind, name) -> value`` of sleuth_operator_ready in ``namespace``."""
    out = {}
    for (name, labels), value in samples.items():
        if name == "sleuth_operator_ready" and ("namespace", namespace) in labels:
            found = dict(labels)
            out[(found["kind"], found["name"])] = value
    return out


def test_reconcile_metrics_follow_the_objects(
    kube: Any, namespace: str, metered: tuple[OperatorProcess, int]
) -> None:
    proc, port = metered
    kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES))
    kube.kubectl(
        "wait", "-n", namespace, "--for=condition=Ready", "agentdeployment/contracts",
        "--timeout=120s",
    )  # fmt: skip
    everything_ready = {
        ("AgentDeployment", "contracts"): 1.0,
        ("ToolBinding", "contracts-clauses"): 1.0,
        ("ToolBinding", "contracts-sql"): 1.0,
        ("ToolBinding", "contracts-web"): 1.0,
        ("EvalSchedule", "contracts-weekly"): 1.0,
    }
    samples = eventually(
        lambda: (s := scrape(port)) and ready_gauges(s, namespace) == everything_ready and s,
        what="every object's ready gauge is 1",
    )
    agent = frozenset({("kind", "AgentDeployment"), ("outcome", "success")})
    assert samples[("sleuth_operator_reconcile_total", agent)] >= 1
    for_agent = frozenset({("kind", "AgentDeployment")})
    assert samples[("sleuth_operator_reconcile_duration_seconds_count", for_agent)] >= 1
    assert samples[("sleuth_operator_reconcile_duration_seconds_sum", for_agent)] > 0
    failed = frozenset({("kind", "AgentDeployment"), ("outcome", "permanent_error")})
    assert samples[("sleuth_operator_reconcile_total", failed)] == 0  # present, at zero

    # A missing Secret turns the agent not ready: its gauge follows.
    kube.kubectl("delete", "secret", "hf-token", "-n", namespace)
    eventually(
        lambda: ready_gauges(scrape(port), namespace).get(("AgentDeployment", "contracts")) == 0,
        what="the agent's ready gauge drops to 0 (SecretNotFound)",
    )

    # Deleting the agent removes its series; its ToolBindings and EvalSchedule turn AgentNotFound.
    kube.kubectl("delete", "agentdeployment", "contracts", "-n", namespace)
    gone = {
        ("ToolBinding", "contracts-clauses"): 0.0,
        ("ToolBinding", "contracts-sql"): 0.0,
        ("ToolBinding", "contracts-web"): 0.0,
        ("EvalSchedule", "contracts-weekly"): 0.0,
    }
    eventually(
        lambda: ready_gauges(scrape(port), namespace) == gone,
        what="the agent's series is gone and the bindings are not ready",
    )
    kube.kubectl("delete", "toolbindings,evalschedules", "--all", "-n", namespace)
    eventually(
        lambda: ready_gauges(scrape(port), namespace) == {},
        what="no ready series left for deleted objects",
    )
    assert "Traceback" not in proc.text()
