"""The typed options of every ``sleuth eval`` command, built once from argparse by cli.py.

The commands take these objects, never an ``argparse.Namespace``: what a command reads is a
field here, and a test can build one without a parser. Values stay as the user typed them where
parsing them can fail (``--threshold``, ``--shard``): the command parses them, so the error
reaches the user the same way as any other bad input (exit 2, and a Failed part with
``--status``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sleuth.evals.rag.agentauth import AgentCredential
from sleuth.evals.status import StatusTarget

Split = Literal["dev", "test", "all"]


@dataclass(frozen=True)
class Outputs:
    """Where a result document goes besides the console summary."""

    out: Path | None = None
    prom: Path | None = None
    pushgateway: str | None = None
    html: Path | None = None
    trace_url: str | None = None
    # With out in a run's own folder: the run folders kept beside it (report/runfolders.py).
    keep_runs: int | None = None


@dataclass(frozen=True)
class StatusOptions:
    """``--status`` and its companions: the EvalSchedule a scheduled run writes its part to."""

    target: StatusTarget | None = None
    run_id: str | None = None
    expect_parts: int = 1
    kubeconfig: str | None = None


@dataclass(frozen=True)
class RunOptions:
    """What every scoring run shares: its labels, the split guard, the gate and the outputs."""

    agent: str = "default"
    dataset: str | None = None
    split: Split = "dev"
    final_report: bool = False
    thresholds: tuple[str, ...] = ()
    max_failed_rows: int = 0
    outputs: Outputs = Outputs()
    progress: bool = True
    shard: str | None = None


@dataclass(frozen=True)
class ClientOptions:
    """How a run talks to its endpoints (``--concurrency``, ``--timeout``, ``--api-key``)."""

    concurrency: int = 8
    timeout_s: float = 120.0
    api_key: str = "sk-local"


@dataclass(frozen=True)
class TsaOptions:
    """``sleuth eval tsa``: one of ``endpoint``, ``traces``, ``router``, ``local_model``."""

    run: RunOptions
    client: ClientOptions
    status: StatusOptions
    cases: Path | None = None
    endpoint: str | None = None
    traces: Path | None = None
    router: bool = False
    local_model: str | None = None
    model: str = "default"
    tool_calling: Literal["native", "guided"] = "native"
    guided_format: Literal["json_schema", "json_object"] = "json_schema"
    max_tokens: int = 512
    agent_client: bool = False
    system_prompt_file: Path | None = None
    descriptions: Path | None = None
    # The running agent whose first step (prompt, tools, model options) the cases are sent with.
    agent_url: str | None = None
    agent_credential: AgentCredential = field(default_factory=AgentCredential)


@dataclass(frozen=True)
class JudgeOptions:
    """The judge and the embeddings of ``sleuth eval ragas``."""

    url: str
    model: str
    max_tokens: int = 4096
    client: Literal["direct", "instructor"] = "direct"
    embeddings_url: str | None = None
    embeddings_model: str = "embedding"
    embeddings_api_key: str | None = None


@dataclass(frozen=True)
class RagasOptions:
    """``sleuth eval ragas``: ``samples`` rows, or the ``golden`` questions asked of
    ``agent_url``."""

    run: RunOptions
    client: ClientOptions
    status: StatusOptions
    judge: JudgeOptions
    samples: Path | None = None
    agent_url: str | None = None
    agent_credential: AgentCredential = field(default_factory=AgentCredential)
    record: Path | None = None
    golden: Path | None = None
    metrics: tuple[str, ...] = ()
    strictness: int = 3


@dataclass(frozen=True)
class RetrievalOptions:
    """``sleuth eval retrieval``: a vector_search ``binding`` over the golden set, or
    ``samples``."""

    run: RunOptions
    binding: Path | None = None
    samples: Path | None = None
    golden: Path | None = None
    qdrant_path: str | None = None
    top_k: int | None = None


@dataclass(frozen=True)
class CompareOptions:
    """``sleuth eval compare A B``."""

    a: Path
    b: Path
    metrics: tuple[str, ...] | None = None
    resamples: int = 10000
    confidence: float = 0.95
    seed: int = 0
    out: Path | None = None
    html: Path | None = None


@dataclass(frozen=True)
class SynthOptions:
    """``sleuth eval synth-corpus``."""

    out: Path
    documents: int = 2000
    questions: int = 300
    seed: int = 7


@dataclass(frozen=True)
class ReportOptions:
    """``sleuth eval report``: result files rendered again, or merged (``--merge``)."""

    results: tuple[Path, ...]
    outputs: Outputs
    merge: bool = False


@dataclass(frozen=True)
class GenerateOptions:
    """``sleuth eval build-golden generate``: one of ``folder``, ``chunks``, ``qdrant``."""

    endpoint: str
    model: str
    out: Path
    folder: Path | None = None
    chunks: Path | None = None
    qdrant: str | None = None
    collection: str = "documents"
    seeds: int = 50
    questions_per_chunk: int = 2
    multi_hop: int = 10
    adversarial: int = 10
    test_percent: int = 30
    concurrency: int = 4
    progress: bool = True


@dataclass(frozen=True)
class ReviewExportOptions:
    """``sleuth eval build-golden review-export``."""

    dataset: Path
    out: Path
    fraction: float = 0.15


@dataclass(frozen=True)
class ReviewImportOptions:
    """``sleuth eval build-golden review-import`` (``out`` None: the dataset in place)."""

    dataset: Path
    verdicts: Path
    out: Path | None = None


@dataclass(frozen=True)
class FreezeOptions:
    """``sleuth eval build-golden freeze``."""

    dataset: Path


@dataclass(frozen=True)
class VerifyOptions:
    """``sleuth eval build-golden verify``."""

    dataset: Path


# The commands that make datasets: they need no judge, no ragas, no Kubernetes client, so they
# run from their own module (:mod:`sleuth.evals.commands.golden`) and start in a fraction of the
# time the scoring commands take.
DatasetOptions = (
    GenerateOptions
    | ReviewExportOptions
    | ReviewImportOptions
    | FreezeOptions
    | VerifyOptions
    | SynthOptions
)
DATASET_OPTIONS = (
    GenerateOptions,
    ReviewExportOptions,
    ReviewImportOptions,
    FreezeOptions,
    VerifyOptions,
    SynthOptions,
)
Options = (
    TsaOptions | RagasOptions | RetrievalOptions | CompareOptions | ReportOptions | DatasetOptions
)
