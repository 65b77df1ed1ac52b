"""Constrained field types shared by the CRD spec models and the agent's configuration file.

The operator renders the agent's configuration file (:mod:`sleuth.core.api.agent_config`) from
the AgentDeployment and ToolBinding specs (:mod:`sleuth.core.api.v1alpha1`), so a field the two
have in common is declared once, here, with the CRD's constraint: the CRD is the contract users
write against, and the file must accept every value the CRD accepts. Each side keeps its own
description (and default) on the field; the type and its bounds come from here.
``tests/core/test_api_fields.py`` fails when a field both sides have differs in type or bounds.

Seconds are whole numbers (``type: integer`` in the CRD, as Kubernetes spells durations in
``fooSeconds`` fields).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from sleuth.core.guided import GuidedFormat, ToolCalling

# Time limits, in whole seconds.
RequestTimeoutSeconds = Annotated[int, Field(ge=1, le=3600)]
"""One whole agent request, all its model turns and tool calls included."""
ModelCallTimeoutSeconds = Annotated[int, Field(ge=1, le=600)]
"""One call of a model server: the agent's model, or the judge that scores answers."""
ToolTimeoutSeconds = Annotated[int, Field(ge=1, le=300)]
"""One call of one tool."""
CacheTtlSeconds = Annotated[int, Field(ge=0, le=86400)]
"""How long a tool result is reused; 0 turns the cache off; at most a day."""

# Agent limits.
MAX_ITERATIONS = 10
MaxIterations = Annotated[int, Field(ge=1, le=MAX_ITERATIONS)]
"""Model turns allowed per request."""
MaxConcurrentRequests = Annotated[int, Field(ge=1, le=10000)]
"""Requests one agent replica serves at once (beyond: 429)."""
SystemPrompt = Annotated[str, Field(max_length=32768)]

# What a client may send (the agent's and the tool services' HTTP servers), and the model's window.
MaxModelLen = Annotated[int, Field(ge=256, le=1048576)]
"""The model server's context length in tokens (vLLM's --max-model-len)."""
MaxBodyBytes = Annotated[int, Field(ge=1024, le=67108864)]
"""Bytes of one request body; checked while it is read, before anything parses it."""
MaxHeaderBytes = Annotated[int, Field(ge=1024, le=1048576)]
"""Bytes of one request's request line and headers."""
ReadTimeoutSeconds = Annotated[int, Field(ge=1, le=600)]
"""How long a client may take to send its headers, or its body."""
KeepAliveTimeoutSeconds = Annotated[int, Field(ge=1, le=600)]
"""How long an idle keep-alive connection stays open."""
MaxQuestionChars = Annotated[int, Field(ge=1, le=1000000)]
"""Characters of the question (the last user message)."""
MaxHistoryMessages = Annotated[int, Field(ge=0, le=1000)]
"""Earlier messages of the conversation a request may carry."""
MaxHistoryChars = Annotated[int, Field(ge=0, le=10000000)]
"""Characters of all those earlier messages together."""

# Names sent to model servers and shown to the model.
ModelName = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f]+$")]
"""A model name as a server takes it in the ``model`` field (vLLM's --served-model-name): no
control characters (a newline would split the served name on vLLM's command line)."""
ToolName = Annotated[str, Field(pattern=r"^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$")]
"""A function name the model sees."""
ToolDescription = Annotated[str, Field(min_length=1, max_length=4096)]
"""What the model reads to choose a tool."""
BoundToolType = Literal["vector_search", "sql_query", "web_search"]
"""The tool types a ToolBinding runs as a tool service (the file adds in-process ``custom``)."""

# Online evaluation of live traffic.
SampleRate = Annotated[float, Field(ge=0, le=1)]
"""Fraction of answered requests scored; 0 turns online evaluation off."""
ScoringQueueSize = Annotated[int, Field(ge=1, le=10000)]
ScoringConcurrency = Annotated[int, Field(ge=1, le=64)]
ScoreWindow = Annotated[int, Field(ge=1, le=10000)]
"""Scored samples averaged into an exported score."""
EmbeddingsSource = Literal["judge", "local", "endpoint"]

# How tool calls are obtained from the model (sleuth.core.guided owns both names).
TOOL_CALLING_DESCRIPTION = (
    "How the model's tool calls are obtained: `native` sends `tools` and reads the server's "
    "`tool_calls` (vLLM needs a --tool-call-parser for the model); `guided` forces each reply "
    "into a JSON Schema (one branch per tool with its own argument schema, parallel calls, and "
    "a final answer) through the server's structured output, for models or servers without a "
    "tool-call parser (llama.cpp with Qwen2.5, for instance)."
)
GUIDED_FORMAT_DESCRIPTION = (
    "With toolCalling guided, the request field carrying the schema: `json_schema` is "
    "response_format {type: json_schema, json_schema: {name, schema}} (vLLM, llama.cpp's "
    "llama-server, OpenAI); `json_object` is response_format {type: json_object, schema} "
    "(llama-cpp-python's server, llama-server)."
)

# Access (spec.agent.access, the file's access): who may call the agent, what each caller sees.
CALLER_NAME = r"^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$"
CallerName = Annotated[str, Field(min_length=1, max_length=63, pattern=CALLER_NAME)]
"""A caller's name: the ``caller`` of audit records and metrics."""
Grant = Literal["trace", "evaluation", "approve"]
Grants = Annotated[list[Grant], Field(max_length=3)]
"""What a caller sees or may do beyond the answer: the trace; its eval header honoured; deciding
the tool calls its own runs wait to have approved."""

# Approval of tool calls (spec.approval of a ToolBinding, the file's tools[].approval).
ApprovalTimeoutSeconds = Annotated[int, Field(ge=1, le=86400)]
"""How long a call waits for a person's decision before it counts as refused."""
QuestionAudit = Literal["full", "digest"]
"""The question in audit records: its text, or only its SHA-256."""

__all__ = [
    "CALLER_NAME",
    "MAX_ITERATIONS",
    "ApprovalTimeoutSeconds",
    "BoundToolType",
    "CacheTtlSeconds",
    "CallerName",
    "EmbeddingsSource",
    "Grant",
    "Grants",
    "GuidedFormat",
    "KeepAliveTimeoutSeconds",
    "MaxBodyBytes",
    "MaxConcurrentRequests",
    "MaxHeaderBytes",
    "MaxHistoryChars",
    "MaxHistoryMessages",
    "MaxIterations",
    "MaxModelLen",
    "MaxQuestionChars",
    "ModelCallTimeoutSeconds",
    "ModelName",
    "QuestionAudit",
    "ReadTimeoutSeconds",
    "RequestTimeoutSeconds",
    "SampleRate",
    "ScoreWindow",
    "ScoringConcurrency",
    "ScoringQueueSize",
    "SystemPrompt",
    "ToolCalling",
    "ToolDescription",
    "ToolName",
    "ToolTimeoutSeconds",
]
