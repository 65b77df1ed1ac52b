"""The README is the front door: every command in it is executed here, every YAML in it is real.

``make demo`` runs literally in tests/demo; ``make test`` is what ``.ci/run`` runs. The rest runs
below: ``sleuth ask`` with and without a model server (the scripted OpenAI-compatible server
stands in for vLLM), and the cluster block (helm install, kubectl apply, wait, get) in a cluster of
its own, with the operator running as a host process since kwok does not run containers.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sleuth.scripted import Scenario, ScriptedResponse, ScriptedServer, ScriptedToolCall
from tests.support import docwalk

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def _commands() -> list[str]:
    lines = []
    for block in _blocks("sh"):
        for line in block.splitlines():
            command = line.split("  #")[0].strip()
            if command and not command.startswith("#"):
                lines.append(command)
    return lines


# Each README command → the test that runs it (literally, or with only a URL substituted).
EXERCISED = {
    "make demo": "tests/demo/test_demo.py::demo_output",
    "make test": ".ci/run",
    ".venv/bin/sleuth ask": "tests/test_readme.py::test_ask_commands",
    "SLEUTH_LLM_URL=": "tests/test_readme.py::test_ask_commands / test_demo_with_a_model_server",
    "helm install": "tests/test_readme.py::test_cluster_block",
    "kubectl ": "tests/test_readme.py::test_cluster_block",
}


def _is_subset(part: Any, whole: Any) -> bool:
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(
            k in whole and _is_subset(v, whole[k]) for k, v in part.items()
        )
    return bool(part == whole)


@pytest.mark.unit
def test_every_readme_command_is_exercised() -> None:
    commands = _commands()
    assert "make demo" in commands
    assert "make test" in commands
    for command in commands:
        assert any(command.startswith(prefix) for prefix in EXERCISED), (
            f"README command not exercised by any test: {command}"
        )
    assert "make test" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.unit
def test_readme_yaml_is_the_shipped_example() -> None:
    examples = [
        doc
        for path in sorted((ROOT / "examples" / "contracts").glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]
    blocks = _blocks("yaml")
    assert len(blocks) >= 2
    for block in blocks:
        shown = yaml.safe_load(block)
        same = [
            d
            for d in examples
            if d["kind"] == shown["kind"] and d["metadata"]["name"] == shown["metadata"]["name"]
        ]
        assert same, f"{shown['kind']}/{shown['metadata']['name']} is not in examples/contracts"
        assert _is_subset(shown["spec"], same[0]["spec"]), (
            f"README's {shown['kind']} differs from examples/contracts"
        )


def _run_readme(command: str, url: str | None = None, timeout: float = 300) -> str:
    """Run one README command from the repository root, the model URL swapped for ``url``."""
    if url:
        command = command.replace("http://127.0.0.1:8000/v1", url)
    env = {k: v for k, v in os.environ.items() if k != "SLEUTH_LLM_URL"}
    argv = shlex.split(command)
    while argv and "=" in argv[0] and not argv[0].startswith("-"):
        key, value = argv.pop(0).split("=", 1)
        env[key] = value
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{command}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def _scripted_planner() -> Scenario:
    """A model that asks for the contracts summary, then answers from its observation."""
    return Scenario(
        turns=[
            ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall(
                        name="contracts_summary",
                        arguments={"min_amount": 100000, "year": 2025, "region": "EU"},
                    )
                ]
            ),
            ScriptedResponse(content="You signed 47 contracts above 100,000 € in 2025 (8.3 M€)."),
        ]
    )


@pytest.fixture
def model_server() -> Iterator[ScriptedServer]:
    with ScriptedServer(_scripted_planner()) as server:
        yield server


@pytest.mark.integration
@pytest.mark.slow
def test_ask_commands(model_server: ScriptedServer) -> None:
    plain, with_model, _ = (c for c in _commands() if c.startswith(("SLEUTH_LLM", ".venv")))
    out = _run_readme(plain)
    assert "Planner:  router (deterministic planner, no LLM)" in out
    assert "2% per month" in out

    out = _run_readme(with_model, url=model_server.url)
    assert "Planner:  meta-llama/Llama-3.1-70B-Instruct" in out
    assert "Action: contracts_summary" in out
    assert '{"num_contracts": 47, "total_eur": "8300000.00"}' in out
    assert "You signed 47 contracts" in out
    first = model_server.requests()[0]
    offered = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert set(offered) == {"contracts_summary", "sql_query", "vector_search", "web_search"}
    region = offered["contracts_summary"]["parameters"]["properties"]["region"]
    assert region["enum"] == ["EU", "NA", "UK", "APAC"]


@pytest.mark.integration
@pytest.mark.slow
def test_demo_with_a_model_server(model_server: ScriptedServer) -> None:
    (command,) = (c for c in _commands() if c.startswith("SLEUTH_LLM_URL") and " demo" in c)
    out = _run_readme(command, url=model_server.url, timeout=600)
    assert f"planner:      the model at {model_server.url}" in out
    assert out.count("Planner:  meta-llama/Llama-3.1-70B-Instruct") == 5
    assert "You signed 47 contracts" in out


@pytest.fixture
def own_cluster() -> Iterator[dict[str, str]]:
    """A cluster of its own: the README's release names must not meet other tests' ones."""
    try:
        with docwalk.own_cluster(f"sleuth-readme-{os.getpid()}") as env:
            yield env
    except RuntimeError as err:
        pytest.fail(str(err))


@pytest.mark.cluster
@pytest.mark.slow
def test_cluster_block(own_cluster: dict[str, str], tmp_path: Path) -> None:
    env = own_cluster
    block = next(b for b in _blocks("sh") if "helm install" in b)
    commands = [c for c in (line.strip() for line in block.splitlines()) if c]
    log = (tmp_path / "operator.log").open("wb")
    # In a real cluster the chart's operator pod reconciles; kwok runs no containers, so the same
    # operator runs on the host, watching the namespace the examples land in.
    operator = subprocess.Popen(
        [str(BIN / "sleuth"), "operator", "--namespace", "default", "--resync-seconds", "5"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        outputs = {}
        for command in commands:
            argv = shlex.split(command)
            if argv[:2] == ["kubectl", "wait"]:
                argv = [a if not a.startswith("--timeout") else "--timeout=180s" for a in argv]
            proc = subprocess.run(
                argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
            )
            assert proc.returncode == 0, f"{command}\n{proc.stdout}\n{proc.stderr}"
            outputs[argv[1]] = proc.stdout
    finally:
        operator.terminate()
        operator.wait(timeout=30)
        log.close()
    assert "condition met" in outputs["wait"]
    table = outputs["get"]
    # Once Ready, the agent stays Ready: it rolls once on creation, and Ready holds during a
    # rollout that keeps enough replicas serving (issue 15).
    assert re.search(r"agentdeployment\.sleuth\.dev/contracts\s+True", table), table
    assert re.search(r"evalschedule\.sleuth\.dev/contracts-weekly\s+0 3 \* \* 1", table), table
    for header in ("READY", "MODEL", "GPUS", "TOOLS", "AGENT", "TYPE", "SCHEDULE", "FAITHFULNESS"):
        assert header in table
    assert "job.batch/contracts-weekly-now created" in outputs["create"]
    deployed = json.loads(
        subprocess.run(
            ["kubectl", "get", "deployment", "-n", "sleuth-system", "-o", "json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert deployed["items"], "helm install created no operator Deployment"
