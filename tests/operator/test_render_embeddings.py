"""Answer relevancy's embeddings default to the agent's retrieval embeddings endpoint.

A chat-model vLLM (the default judge) serves no ``/embeddings``; the agent's vector_search
ToolBinding names an endpoint that does (``spec.vectorSearch.embedding``). Online (the agent's
config file) and scheduled (the eval CronJob's ``sleuth eval ragas`` arguments) both use it
unless the user chose embeddings. An endpoint behind an API key is never shared: a tool's
credentials live only in its tool service (DESIGN), so no Secret of a ToolBinding reaches the
agent or the eval pods. Without a shareable endpoint they embed with the local all-MiniLM-L6-v2
the image carries, as the tool service does.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
import yaml

from sleuth.agent.onlineeval import judge_config
from sleuth.core.api.agent_config import parse_agent_config
from sleuth.core.api.v1alpha1 import AgentDeploymentSpec, EvalScheduleSpec
from sleuth.core.api.v1alpha1.toolbinding import ToolBindingSpec
from sleuth.operator.reconcile_eval import eval_target
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.agent import Binding, render_agent
from sleuth.operator.render.evalschedule import EvalTarget, render_eval_cronjob
from sleuth.scoring.judge import JudgeConfig, build_judge

pytestmark = pytest.mark.unit

SETTINGS = RenderSettings(sleuth_image="ghcr.io/sleuth-dev/sleuth:0.1.0")
AGENT = Owner(kind="AgentDeployment", name="contracts", namespace="team-a", uid="uid-1")
SCHEDULE = Owner(kind="EvalSchedule", name="weekly", namespace="team-a", uid="uid-2")
MODEL = {"endpoint": "http://vllm.models:8000/v1", "servedModelName": "llama"}
TEI = "http://tei.models:8080/v1"
KEY = {"name": "tei", "key": "token"}


def _binding(
    embedding: dict[str, Any] | None = None, tool: str = "vector_search"
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "agentRef": {"name": "contracts"},
        "type": "vector_search",
        "name": tool,
    }
    spec["vectorSearch"] = {"url": "http://qdrant:6333", "collection": "clauses"}
    if embedding is not None:
        spec["vectorSearch"]["embedding"] = embedding
    return spec


SQL = {
    "agentRef": {"name": "contracts"},
    "type": "sql_query",
    "sqlQuery": {
        "connectionSecretRef": {"name": "pg", "key": "uri"},
        "allowedTables": ["contracts"],
    },
}


def _bindings(*specs: tuple[str, dict[str, Any]]) -> list[Binding]:
    return [Binding(name, ToolBindingSpec.model_validate(spec)) for name, spec in specs]


def _render_agent(
    agent: dict[str, Any], bindings: list[Binding]
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    spec = AgentDeploymentSpec.model_validate({"model": MODEL, "agent": agent})
    configmap, deployment, _ = render_agent(AGENT, spec, bindings, SETTINGS)
    config = yaml.safe_load(configmap["data"]["config.yaml"])
    env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    return config, {e["name"]: e for e in env}


def _secret_envs(env: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    refs = [(e.get("valueFrom") or {}).get("secretKeyRef") for e in env.values()]
    return [r for r in refs if r is not None]


def test_online_embeddings_default_to_the_retrieval_endpoint() -> None:
    emb = {"endpoint": TEI, "model": "bge-m3"}
    config, env = _render_agent({}, _bindings(("sql", SQL), ("clauses", _binding(emb))))
    assert config["onlineEval"]["embeddings"] == {
        "source": "endpoint",
        "endpoint": TEI,
        "model": "bge-m3",
    }
    judge = judge_config(parse_agent_config(yaml.safe_dump(config)))
    assert (judge.base_url, judge.model) == ("http://vllm.models:8000/v1", "llama")
    assert (judge.embeddings_base_url, judge.embeddings_model) == (TEI, "bge-m3")
    assert _secret_envs(env) == []


def test_an_endpoint_behind_a_tool_key_is_not_shared_with_the_agent() -> None:
    """The binding's key stays in its tool service: the agent embeds locally instead."""
    keyed = {"endpoint": TEI, "model": "bge-m3", "apiKeySecretRef": KEY}
    config, env = _render_agent({}, _bindings(("clauses", _binding(keyed))))
    assert config["onlineEval"]["embeddings"] == {"source": "local", "model": "embedding"}
    assert KEY not in _secret_envs(env)
    # ... and a later binding whose endpoint needs no key is used instead.
    free = {"endpoint": "http://free.models/v1", "model": "e5"}
    config, _ = _render_agent(
        {}, _bindings(("clauses", _binding(keyed)), ("notes", _binding(free, tool="notes")))
    )
    assert config["onlineEval"]["embeddings"]["endpoint"] == "http://free.models/v1"


def test_the_oldest_vector_search_binding_naming_an_endpoint_wins() -> None:
    first = {"endpoint": "http://first.models/v1", "model": "e5"}
    second = {"endpoint": "http://second.models/v1", "model": "bge-m3"}
    bindings = _bindings(
        ("local", _binding(tool="notes")),  # built-in local model: no endpoint
        ("older", _binding(first, tool="clauses")),
        ("newer", _binding(second, tool="policies")),
    )
    config, _ = _render_agent({}, bindings)
    assert config["onlineEval"]["embeddings"] == {
        "source": "endpoint",
        "endpoint": "http://first.models/v1",
        "model": "e5",
    }


@pytest.mark.parametrize(
    "bindings",
    [[], _bindings(("sql", SQL)), _bindings(("clauses", _binding()))],
    ids=["no-bindings", "no-vector-search", "vector-search-with-local-model"],
)
def test_without_a_retrieval_endpoint_the_local_model_embeds(bindings: list[Binding]) -> None:
    config, env = _render_agent({}, bindings)
    assert config["onlineEval"]["embeddings"] == {"source": "local", "model": "embedding"}
    assert _secret_envs(env) == []


@pytest.mark.parametrize(
    ("chosen", "rendered"),
    [
        ({"source": "judge"}, {"source": "judge", "model": "embedding"}),
        ({"source": "local"}, {"source": "local", "model": "embedding"}),
        (
            {"source": "endpoint", "endpoint": "http://mine/v1", "model": "m"},
            {"source": "endpoint", "endpoint": "http://mine/v1", "model": "m"},
        ),
    ],
)
def test_an_explicit_choice_wins_over_the_retrieval_endpoint(
    chosen: dict[str, Any], rendered: dict[str, Any]
) -> None:
    emb = {"endpoint": TEI, "model": "bge-m3"}
    config, _ = _render_agent(
        {"onlineEval": {"embeddings": chosen}}, _bindings(("clauses", _binding(emb)))
    )
    assert config["onlineEval"]["embeddings"] == rendered


# Scheduled evaluation.

SCHEDULE_SPEC = EvalScheduleSpec.model_validate(
    {
        "agentRef": {"name": "contracts"},
        "schedule": "0 3 * * 1",
        "dataset": {"configMapRef": {"name": "golden", "key": "golden.jsonl"}},
        "metrics": ["faithfulness", "answerRelevancy", "toolSelectionAccuracy"],
        "toolSelection": {"configMapRef": {"name": "tsa", "key": "tsa.jsonl"}},
    }
)


def _agent_obj() -> dict[str, Any]:
    return {
        "metadata": {"name": "contracts"},
        "spec": {"model": MODEL},
        "status": {"modelEndpoint": "http://vllm.models:8000/v1", "model": "llama"},
    }


def _binding_obj(name: str, created: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": created}, "spec": spec}


def _ragas(target: EvalTarget) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The ragas container's arguments and environment (no other container embeds)."""
    job = render_eval_cronjob(SCHEDULE, SCHEDULE_SPEC, target, SETTINGS)["spec"]["jobTemplate"]
    containers = {c["name"]: c for c in job["spec"]["template"]["spec"]["containers"]}
    assert set(containers) == {"ragas", "tsa"}
    assert not [e for e in containers["tsa"]["env"] if "EMBEDDINGS" in e["name"]]
    ragas = containers["ragas"]
    return ragas["args"], {e["name"]: e for e in ragas["env"]}


def _parse(args: list[str]) -> Any:
    from sleuth.core.cli import build_parser

    return build_parser("eval").parse_args(args)


def test_scheduled_ragas_embeds_with_the_oldest_retrieval_endpoint() -> None:
    older = {"endpoint": TEI, "model": "bge-m3"}
    newer = {"endpoint": "http://newer.models/v1", "model": "e5"}
    keyed = {"endpoint": "http://keyed.models/v1", "model": "x", "apiKeySecretRef": KEY}
    objs = [  # listed newest first: the reconcile orders them by creationTimestamp
        _binding_obj("newer", "2026-11-02T00:00:00Z", _binding(newer, tool="policies")),
        _binding_obj("sql", "2026-10-01T00:00:00Z", SQL),
        _binding_obj("older", "2026-11-01T00:00:00Z", _binding(older, tool="clauses")),
        _binding_obj("keyed", "2026-09-01T00:00:00Z", _binding(keyed, tool="keyed")),
    ]
    target = eval_target(_agent_obj(), objs)
    assert target is not None
    argv, env = _ragas(target)
    args = _parse(argv)
    assert (args.judge_url, args.judge_model) == ("http://vllm.models:8000/v1", "llama")
    # the oldest, keyed binding is skipped: its key stays in its tool service
    assert (args.embeddings_url, args.embeddings_model) == (TEI, "bge-m3")
    assert KEY not in _secret_envs(env)


@pytest.mark.parametrize(
    "objs",
    [
        [],
        [_binding_obj("sql", "2026-10-01T00:00:00Z", SQL)],
        [_binding_obj("local", "2026-10-01T00:00:00Z", _binding())],
        [  # another agent's binding
            _binding_obj(
                "other",
                "2026-10-01T00:00:00Z",
                {**_binding({"endpoint": TEI, "model": "m"}), "agentRef": {"name": "other"}},
            )
        ],
    ],
    ids=["no-bindings", "no-vector-search", "local-model", "other-agent"],
)
def test_scheduled_ragas_without_a_retrieval_endpoint_embeds_locally(
    objs: list[dict[str, Any]],
) -> None:
    target = eval_target(_agent_obj(), objs)
    assert target is not None
    argv, env = _ragas(target)
    assert _parse(argv).embeddings_url == "local"  # the MiniLM the image carries
    assert KEY not in _secret_envs(env)


class _Embeddings(BaseHTTPRequestHandler):
    """An OpenAI-compatible /embeddings that records the Authorization header it was sent."""

    seen: ClassVar[list[tuple[str, str]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append((self.path, self.headers.get("Authorization", "")))
        data = [{"index": i, "embedding": [1.0, 0.0, 0.0]} for i, _ in enumerate(body["input"])]
        out = json.dumps({"data": data, "model": body["model"], "usage": {}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def embeddings_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Embeddings.seen = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(("emb_key", "sent"), [("tei-secret", "tei-secret"), (None, "judge-key")])
def test_the_embeddings_endpoint_gets_its_own_key_else_the_judges(
    embeddings_server: str, emb_key: str | None, sent: str
) -> None:
    cfg = JudgeConfig(
        base_url="http://judge.invalid/v1",
        model="judge",
        api_key="judge-key",
        embeddings_base_url=embeddings_server,
        embeddings_model="bge-m3",
        embeddings_api_key=emb_key,
    )

    async def embed() -> list[float]:
        bundle = build_judge(cfg)
        try:
            return await bundle.embeddings.aembed_text("late delivery penalty")
        finally:
            await bundle.aclose()

    assert asyncio.run(embed()) == [1.0, 0.0, 0.0]
    assert _Embeddings.seen == [("/v1/embeddings", f"Bearer {sent}")]
