"""What the first model call of a run sends besides the question, and ``GET /v1/eval/first-step``.

Tool selection accuracy scores the decision an agent's model makes at the first step of a run.
To score *this* agent — the tools of its ToolBindings as its tool services serve them, their
descriptions, its system prompt, how its model client asks (native tool calls or a guided
reply, how many calls a step may hold) — ``sleuth eval tsa --agent-url`` asks the running agent
what that call sends (:class:`FirstStep`) and sends exactly that with each case's question.

The agent builds it from the objects its loop uses (:attr:`sleuth.agent.loop.Agent.tools`, its
:class:`~sleuth.agent.loop.LoopSettings`, the :class:`ModelRequest` its model client is made
with), so it cannot differ from what a run sends. Only a caller granted ``evaluation`` (an
EvalSchedule's Job; the local caller of an agent without access control) may read it: the
system prompt is the team's, not every caller's; others get 403.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from sleuth.agent.access.caller import Caller, current_caller
from sleuth.agent.loop import opening_messages
from sleuth.core.api.agent_config import AgentConfig
from sleuth.core.guided import DEFAULT_MAX_CALLS, GuidedFormat, ToolCalling
from sleuth.core.http.error_shapes import error_body
from sleuth.core.tools import ToolSpec

FIRST_STEP_PATH = "/v1/eval/first-step"


class _Wire(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True
    )


class ModelRequest(_Wire):
    """How the agent's model client asks: the options it is made with (besides the endpoint,
    the model name and the key, which the eval has of its own)."""

    stream: bool = True
    temperature: float = 0.0
    max_tokens: int = 1024
    tool_calling: ToolCalling = "native"
    guided_format: GuidedFormat = "json_schema"
    max_calls: int = DEFAULT_MAX_CALLS  # calls one guided reply may hold (1: no parallel calls)

    @classmethod
    def of(cls, config: AgentConfig) -> ModelRequest:
        model = config.model
        return cls(
            stream=model.stream,
            temperature=model.temperature,
            max_tokens=model.max_tokens,
            tool_calling=model.tool_calling,
            guided_format=model.guided_format,
            max_calls=DEFAULT_MAX_CALLS if config.parallel_tool_calls else 1,
        )

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments of :class:`~sleuth.core.llm.OpenAIChatModel`."""
        return self.model_dump(by_alias=False)


class FirstStep(_Wire):
    """The system prompt, the ``tools[]`` and the model client's options of a first step."""

    system_prompt: str
    tools: list[dict[str, Any]]
    model: ModelRequest

    def messages(self, question: str) -> list[dict[str, Any]]:
        """The messages the first step sends for ``question`` (no earlier turns)."""
        return opening_messages(self.system_prompt, question)

    def specs(self) -> list[ToolSpec]:
        return [ToolSpec.from_openai(entry) for entry in self.tools]


def evaluation_only(what: str) -> Response:
    """The 403 of an eval route (this one, ``/v1/eval/wake``) to a caller without the
    ``evaluation`` grant; ``what``: what is refused, e.g. "waking the model server is allowed"."""
    return error_body(
        403,
        f"{what} only to callers granted 'evaluation' (spec.agent.access.callers[].grants)",
        "forbidden",
    )


first_step_router = APIRouter()


@first_step_router.get(FIRST_STEP_PATH, response_model=None)
async def first_step(
    request: Request, caller: Annotated[Caller, Depends(current_caller)]
) -> Response:
    if not caller.evaluation:
        return evaluation_only("the first step (system prompt and tools) is served")
    step: FirstStep = request.app.state.service.first_step
    return JSONResponse(step.model_dump(mode="json", by_alias=True))


__all__ = ["FIRST_STEP_PATH", "FirstStep", "ModelRequest", "evaluation_only", "first_step_router"]
