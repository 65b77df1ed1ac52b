"""``sleuth scripted-model``: ``--responder FILE:FUNCTION`` (a Python responder before the rules),
and vLLM's command line as the operator renders it."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from sleuth.core.api.v1alpha1 import AgentDeploymentSpec
from sleuth.operator.render import RenderSettings
from sleuth.operator.render.model import vllm_args
from sleuth.scripted import Scenario, ScriptedProcess
from sleuth.scripted.cli import load_responder
from tests.operator.operator_testkit import example

pytestmark = pytest.mark.integration  # the vLLM command line runs a real server


def test_a_responder_file_is_loaded_and_answers_before_the_rules(tmp_path: Path) -> None:
    path = tmp_path / "resp.py"
    path.write_text(
        "from sleuth.scripted import ScriptedResponse\n"
        "def respond(body):\n"
        "    return ScriptedResponse(content='pong') if 'ping' in str(body) else None\n"
    )
    respond = load_responder(f"{path}:respond")
    assert respond is not None
    answer = respond({"messages": [{"role": "user", "content": "ping"}]})
    assert answer is not None
    assert answer.content == "pong"
    assert respond({"messages": [{"role": "user", "content": "other"}]}) is None


def test_no_responder_and_a_malformed_one() -> None:
    assert load_responder(None) is None
    with pytest.raises(SystemExit, match="FILE:FUNCTION"):
        load_responder("no-function-given")


def test_the_command_line_rendered_for_vllm_serves_the_model_by_its_served_name() -> None:
    """What lets an image whose entrypoint is ``sleuth scripted-model`` stand in for vLLM's in a
    model server's pod (tests/e2e/test_autoscaling_on_a_real_node.py)."""
    doc = example("AgentDeployment", "contracts")[0]
    spec = AgentDeploymentSpec.model_validate(doc["spec"])
    rendered = vllm_args(spec.model, RenderSettings())
    at = rendered.index("--host")
    args = rendered[:at] + rendered[at + 4 :]  # the server's own address, from the runner
    assert "--tensor-parallel-size" in args
    assert "--tool-call-parser" in args
    with ScriptedProcess(Scenario(), None, *args) as server:
        models = httpx.get(f"{server.url}/models", timeout=10).json()
    assert [m["id"] for m in models["data"]] == [spec.model.effective_served_name]
