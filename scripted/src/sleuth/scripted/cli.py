"""``sleuth scripted-model``: serve a scenario file over HTTP.

Also runnable as ``python -m sleuth.scripted``. It takes the command line the operator renders for
vLLM (:func:`sleuth.operator.render.model.vllm_args`) too, so an image whose entrypoint is
``sleuth scripted-model`` stands in for the vLLM image in a model server's pod:
``--served-model-name`` (else ``--model``) is the model it answers as, ``--max-num-seqs`` is its
engine's, and the GPU settings (``--tensor-parallel-size``, ``--max-model-len``, ``--quantization``,
``--enable-auto-tool-choice``, ``--tool-call-parser``) are accepted and have no effect.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from pathlib import Path
from typing import Any

from sleuth.scripted.app import create_app
from sleuth.scripted.engine import MAX_RUNNING, Engine
from sleuth.scripted.scenario import Scenario, load_scenario, seed_latency_profile
from sleuth.scripted.state import Responder, ScriptState


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", help="JSON or YAML scenario file (default: empty script)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind (default 8000)")
    parser.add_argument(
        "--responder",
        metavar="FILE:FUNCTION",
        help="a Python file and a function in it, called with each chat request body before "
        "the scenario's rules; it returns a ScriptedResponse, or None to let the rules answer",
    )
    parser.add_argument(
        "--api-key",
        default=os.environ.get("VLLM_API_KEY"),
        help="require this bearer token on the API routes, as vLLM's --api-key does "
        "(default: $VLLM_API_KEY; none: open)",
    )
    parser.add_argument(
        "--max-num-seqs",
        type=int,
        default=MAX_RUNNING,
        help="chat requests served at once, as vLLM's --max-num-seqs; the others wait, counted "
        f"in vllm:num_requests_waiting on /metrics (default {MAX_RUNNING})",
    )
    vllm = parser.add_argument_group("vLLM's command line (a stand-in for its image)")
    vllm.add_argument("--model", help="the model vLLM would load: the served name by default")
    vllm.add_argument("--served-model-name", help="the model name it answers as")
    for flag in (
        "--tensor-parallel-size",
        "--max-model-len",
        "--quantization",
        "--tool-call-parser",
    ):
        vllm.add_argument(flag, help="accepted, no effect")
    vllm.add_argument("--enable-auto-tool-choice", action="store_true", help="accepted, no effect")
    parser.add_argument(
        "--seed-latency",
        action="store_true",
        help="override the scenario's latency with the seed article's profile",
    )


def load_responder(spec: str | None) -> Responder | None:
    """``FILE:FUNCTION`` → that function (the file is loaded as a module of its own)."""
    if not spec:
        return None
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        raise SystemExit(f"--responder: expected FILE:FUNCTION, got {spec!r}")
    loaded = importlib.util.spec_from_file_location(Path(path).stem, path)
    if loaded is None or loaded.loader is None:
        raise SystemExit(f"--responder: cannot load {path}")
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    function: Responder = getattr(module, name)
    return function


def run(args: argparse.Namespace) -> int:
    import uvicorn

    scenario = load_scenario(args.scenario) if args.scenario else Scenario()
    if args.seed_latency:
        scenario = scenario.model_copy(update={"latency": seed_latency_profile()})
    served = args.served_model_name or args.model
    if served:
        scenario = scenario.model_copy(update={"model": served})
    if args.max_num_seqs < 1:
        raise SystemExit("--max-num-seqs: must be at least 1")
    engine = Engine(args.max_num_seqs)
    state = ScriptState(scenario, load_responder(args.responder), args.api_key, engine)
    app = create_app(state)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "scripted-model",
        help="serve a scripted OpenAI-compatible model (tests and benchmarks; not a model)",
        description=__doc__,
    )
    add_arguments(parser)
    parser.set_defaults(func=run)
