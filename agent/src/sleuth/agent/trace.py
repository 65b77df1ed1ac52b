"""Typed records of every step of one agent run: the trace the API returns and the evals read.

A :class:`Trace` is a list of steps in order: a :class:`ModelStep` for each model call and a
:class:`ToolStep` for each round of tool calls (one :class:`ToolCallRecord` per call). Times are
milliseconds since the start of the run (``startMs``/``endMs``) plus durations, so overlap of
parallel calls is visible in the trace itself. Read one back with ``Trace.model_validate(data)``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

ToolCallStatus = Literal[
    "ok",  # the tool answered
    "cached",  # answered from the result cache, the tool was not called
    "error",  # the tool raised ToolError (permanent)
    "unavailable",  # the tool is down or raised a retryable error
    "timeout",  # the tool did not answer within its timeout
    "malformed",  # the model's arguments were not a JSON object; the model was asked to fix them
    "unknown_tool",  # the model asked for a tool that is not offered
    "retry_refused",  # the same failed call was already retried once in this conversation
    "not_approved",  # a person rejected it, or nobody could approve it (sleuth.agent.approval)
]

StopReason = Literal[
    "answered",
    "iteration_limit",
    "timeout",
    "model_error",
    "awaiting_approval",  # paused before calls a person must approve (sleuth.agent.approval)
]
Verdict = Literal[
    "approved",  # a person with the approve grant approved
    "rejected",  # a person rejected (with a reason)
    "expired",  # nobody decided within the tool's approval.timeoutSeconds
    "refused",  # nobody could decide: no approve grant, too many pending, the agent stopped
]


class _Record(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class RequestedCall(_Record):
    """A tool call as the model emitted it."""

    id: str
    name: str
    arguments_text: str


class ModelStep(_Record):
    """One chat completions call."""

    kind: Literal["model"] = "model"
    iteration: int = Field(description="Tool rounds completed before this call.")
    start_ms: float
    end_ms: float
    ttft_ms: float | None = Field(description="Time to first token (streaming only).")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    content: str | None = None
    thought: str | None = Field(
        default=None,
        description="What the model reasoned before it acted (a guided reply's thought); "
        "never part of the answer.",
    )
    tool_calls: list[RequestedCall] = Field(default_factory=list)
    finish_reason: str | None = None
    error: str | None = None

    @property
    def duration_ms(self) -> float:
        return self.end_ms - self.start_ms


class ToolCallRecord(_Record):
    """One tool call: what was asked, what came back, when, and what the model was told."""

    id: str
    tool: str
    arguments: dict[str, Any] | None = Field(description="Parsed arguments; null if malformed.")
    status: ToolCallStatus
    observation: str = Field(description="The tool message content sent back to the model.")
    start_ms: float
    end_ms: float
    attempt: int = Field(default=1, description="1 for a first call, 2 for its one retry.")
    citations: list[dict[str, str]] = Field(default_factory=list)

    @property
    def duration_ms(self) -> float:
        return self.end_ms - self.start_ms


class ToolStep(_Record):
    """The tool calls requested by one model turn, run concurrently when allowed."""

    kind: Literal["tools"] = "tools"
    iteration: int = Field(description="1-based index of this tool round.")
    parallel: bool
    start_ms: float
    end_ms: float
    calls: list[ToolCallRecord]


Step = Annotated[ModelStep | ToolStep, Field(discriminator="kind")]


class PendingCall(_Record):
    """A call that waits for a person, and why."""

    id: str
    tool: str
    arguments: dict[str, Any]
    why: str = Field(description="The rule that paused it (tools[].approval).")


class ApprovalRecord(_Record):
    """One decision on the calls of one paused turn: who, what, when."""

    id: str = Field(description="The approval's id (apr_...), or the A2A task's id.")
    calls: list[PendingCall]
    decision: Verdict
    by: str | None = Field(default=None, description="The caller who decided (its name).")
    subject: str | None = Field(default=None, description="Its key id or token subject.")
    reason: str = ""
    requested_at: str = Field(description="When the run paused (UTC, ISO 8601).")
    decided_at: str = Field(description="When the decision was taken (UTC, ISO 8601).")
    waited_ms: float


class Trace(_Record):
    """The whole run."""

    question: str
    model: str
    tool_calling: Literal["native", "guided"] | None = Field(
        default=None,
        description="How the model's tool calls were obtained: native (the server's tool_calls) "
        "or guided (a JSON Schema the reply had to follow); null for the router.",
    )
    steps: list[Step] = Field(default_factory=list)
    iterations: int = Field(default=0, description="Tool rounds run.")
    stop_reason: StopReason = "answered"
    total_ms: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    malformed_tool_calls: int = 0
    cache_hits: int = 0
    forced_answer: bool = Field(
        default=False,
        description="True when the model repeated calls whose results it already had and was "
        "asked once to answer without tools.",
    )
    degraded: bool = Field(
        default=False,
        description="True when the model server failed and the deterministic router answered.",
    )
    approvals: list[ApprovalRecord] = Field(
        default_factory=list, description="Decisions on calls a person had to approve."
    )

    def model_steps(self) -> list[ModelStep]:
        return [s for s in self.steps if isinstance(s, ModelStep)]

    def tool_calls(self) -> list[ToolCallRecord]:
        return [c for s in self.steps if isinstance(s, ToolStep) for c in s.calls]

    def contexts(self) -> list[str]:
        """Observations of successful calls, in order (what RAGAS calls contexts)."""
        return [c.observation for c in self.tool_calls() if c.status in ("ok", "cached")]
