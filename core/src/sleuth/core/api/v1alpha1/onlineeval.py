"""``spec.agent.onlineEval`` of an AgentDeployment: the agent scores a sample of live answers.

The operator writes it into the agent's configuration file (``sleuth.core.api.agent_config``); the
agent's ``sleuth.agent.onlineeval`` does the sampling and scoring. The settings the spec and the
file both hold are declared once, here (:class:`OnlineEvalSettings`,
:class:`EmbeddingsChoice`), and the file's models extend them; only how the judge and the
embeddings server are reached differs (a Secret reference and a URL pattern in the spec, an
environment variable's name and a parsed URL in the file).
"""

from __future__ import annotations

from pydantic import Field, model_validator

from sleuth.core.api.fields import (
    EmbeddingsSource,
    ModelCallTimeoutSeconds,
    ModelName,
    SampleRate,
    ScoreWindow,
    ScoringConcurrency,
    ScoringQueueSize,
)
from sleuth.core.api.v1alpha1.common import URL_PATTERN, SpecModel
from sleuth.core.api.v1alpha1.evalschedule import JudgeSpec
from sleuth.core.names import AGENT_ONLINE_EVAL_DROPPED


class EmbeddingsChoice(SpecModel):
    """Where answer relevancy gets its embeddings (it compares questions by cosine)."""

    source: EmbeddingsSource = Field(
        default="judge",
        description="judge: the judge's own /embeddings (a chat-model vLLM serves none); local: "
        "all-MiniLM-L6-v2 inside the agent pod (CPU; the sleuth image carries it); endpoint: the "
        "OpenAI-compatible server at `endpoint` (called with the judge's API key).",
    )
    model: ModelName = Field(default="embedding", description="Model name sent to /embeddings.")


class OnlineEvalEmbeddings(EmbeddingsChoice):
    """Where answer relevancy gets its embeddings (it compares questions by cosine)."""

    endpoint: str | None = Field(
        default=None,
        max_length=2048,
        pattern=URL_PATTERN,
        description="Base URL (with /v1) of the embeddings server; only with source: endpoint.",
    )

    @model_validator(mode="after")
    def _endpoint_for_endpoint(self) -> OnlineEvalEmbeddings:
        if (self.source == "endpoint") != (self.endpoint is not None):
            raise ValueError(
                "spec.agent.onlineEval.embeddings.endpoint is set exactly when source is endpoint"
            )
        return self


class OnlineEvalSettings(SpecModel):
    """How much live traffic is scored and how: the online evaluation's own settings."""

    sample_rate: SampleRate = Field(
        default=0.05,
        description="Fraction (0-1) of answered requests scored online; 0 turns it off.",
    )
    queue_size: ScoringQueueSize = Field(
        default=100,
        description="Sampled answers waiting for the judge; beyond it new samples are dropped "
        f"(counted in {AGENT_ONLINE_EVAL_DROPPED}).",
    )
    concurrency: ScoringConcurrency = Field(
        default=2, description="Samples scored at once per agent pod."
    )
    window: ScoreWindow = Field(
        default=50,
        description="The exported scores are the mean of this many last scored samples.",
    )
    timeout_seconds: ModelCallTimeoutSeconds = Field(
        default=60, description="Timeout of one judge request, in seconds."
    )


class OnlineEvalSpec(OnlineEvalSettings):
    """Online evaluation of live traffic by the agent service.

    The agent queues a sampled share of answered requests (bounded: a full queue drops the
    sample, never slows or fails the request) and scores faithfulness and answer relevancy with
    the judge, with the metrics of the scheduled evaluation.
    """

    judge: JudgeSpec | None = Field(
        default=None, description="The judge; defaults to the agent's own model server and model."
    )
    embeddings: OnlineEvalEmbeddings | None = Field(
        default=None,
        description="Embeddings for answer relevancy. Omitted: the embeddings endpoint of the "
        "agent's oldest vector_search ToolBinding that names one needing no API key "
        "(spec.vectorSearch.embedding; a tool's key never leaves its tool service), else local "
        "(the model the tool service embeds with by default).",
    )


__all__ = [
    "EmbeddingsChoice",
    "OnlineEvalEmbeddings",
    "OnlineEvalSettings",
    "OnlineEvalSpec",
]
