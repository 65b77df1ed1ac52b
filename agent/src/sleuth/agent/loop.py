"""The ReAct loop as an explicit state machine: ask the model → run the tools → … → answer.

::

    ASK_MODEL ──text──────────────▶ ANSWERED
        │ tool calls                 ▲
        │ ── all already answered ─▶ SYNTHESIZE (asked once more, without tools)
        ▼
    RUN_TOOLS ──rounds < limit──▶ ASK_MODEL
        │ rounds == limit and the model still wants tools
        ▼
    LIMIT (honest "not enough evidence" answer with what was found)

    RUN_TOOLS ──a call a person must approve──▶ AWAIT_APPROVAL (the run returns, paused)
        ▲                                           │ decided: resume=result
        └───────────────────────────────────────────┘

A run given a :class:`~sleuth.agent.approval.gate.TurnGate` asks it before each round of tool
calls: calls a person must approve and nobody has decided pause the run (``trace.stop_reason``
``awaiting_approval``, :attr:`AgentResult.paused` holds the turn); the round resumes from there
with the decisions (``run(..., resume=paused_result, gate=...)``). A call that was not approved is
not run: the model reads an error observation and answers with what it has
(:mod:`sleuth.agent.approval`).

A turn whose every call repeats one this run already made (same tool, same arguments) gets no new
evidence: small models loop that way until the limit. Instead of running the calls again, the loop
asks the model once to answer from the results it has, with no tools offered
(``trace.forced_answer``).

A model failure ends the run in MODEL_ERROR (answer says so, with the evidence gathered), the
whole-request timeout in TIMEOUT. Every step is appended to the :class:`Trace`.

Given an :class:`~sleuth.agent.events.AnswerStream`, the run reports progress as it goes (model
asked, tools started, each tool done) and relays the model's text as the model server streams
it; the caller finishes the stream with the final answer (:mod:`sleuth.agent.events`).

Entry point: ``await Agent(model, runner, settings).run("question")`` → :class:`AgentResult`.
"""

from __future__ import annotations

import asyncio
import enum
import json
from dataclasses import dataclass, field
from typing import Any

from sleuth.agent.approval.gate import PausedTurn, TurnGate
from sleuth.agent.approval.pending import Pending
from sleuth.agent.events import AnswerStream, Progress, TextRelay
from sleuth.agent.prompts import (
    DEFAULT_SYSTEM_PROMPT,
    SYNTHESIZE_PROMPT,
    limit_answer,
    model_error_answer,
    timeout_answer,
)
from sleuth.agent.toolrun import Conversation, ToolRunner
from sleuth.agent.trace import ModelStep, RequestedCall, ToolStep, Trace
from sleuth.core.api.agent_config import AgentConfig
from sleuth.core.errors import ModelError
from sleuth.core.llm import ChatModel, ModelTurn, TextStreamingModel, ToolCallRequest


@dataclass(frozen=True, slots=True)
class LoopSettings:
    max_iterations: int = 5
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    request_timeout_s: float = 60.0

    @classmethod
    def from_config(cls, config: AgentConfig) -> LoopSettings:
        return cls(
            max_iterations=config.max_iterations,
            system_prompt=config.system_prompt or DEFAULT_SYSTEM_PROMPT,
            request_timeout_s=config.request_timeout_seconds,
        )


@dataclass(frozen=True, slots=True)
class AgentResult:
    answer: str
    citations: list[dict[str, str]]
    trace: Trace
    # The conversation as it ended, so another planner can go on from it (the router fallback).
    messages: tuple[dict[str, Any], ...] = ()
    conversation: Conversation | None = None
    # Streamed: the text shown holds a model reply that never completed (AnswerStream.cut).
    text_cut: bool = False
    # Paused before calls a person must approve (stop reason awaiting_approval) ...
    paused: PausedTurn | None = None
    # ... and kept waiting for the decision by the service (sleuth.agent.approval.desk).
    approval: Pending | None = None


class State(enum.Enum):
    ASK_MODEL = "ask_model"
    RUN_TOOLS = "run_tools"
    SYNTHESIZE = "synthesize"
    ANSWERED = "answered"
    LIMIT = "iteration_limit"
    MODEL_ERROR = "model_error"
    AWAIT_APPROVAL = "awaiting_approval"


@dataclass(slots=True)
class _Run:
    """Mutable state of one run."""

    messages: list[dict[str, Any]]
    trace: Trace
    conversation: Conversation = field(default_factory=Conversation)
    pending: ModelTurn | None = None
    answer: str = ""
    error: str = ""
    stream: AnswerStream | None = None
    gate: TurnGate | None = None
    paused: PausedTurn | None = None


def opening_messages(
    system_prompt: str, question: str, history: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The messages of a run's first model call: the system prompt, the earlier turns, the
    question (what ``sleuth eval tsa`` also sends, :mod:`sleuth.agent.firststep`)."""
    return [
        {"role": "system", "content": system_prompt},
        *(history or []),
        {"role": "user", "content": question},
    ]


class Agent:
    """One configured agent: a model, the tools it may call, and its limits. Reusable."""

    def __init__(self, model: ChatModel, runner: ToolRunner, settings: LoopSettings) -> None:
        self.model = model
        self.runner = runner
        self.settings = settings
        self._tools = runner.openai_tools()

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The ``tools[]`` every first model call of a run offers."""
        return list(self._tools)

    async def run(
        self,
        question: str,
        history: list[dict[str, Any]] | None = None,
        *,
        resume: AgentResult | None = None,
        stream: AnswerStream | None = None,
        gate: TurnGate | None = None,
    ) -> AgentResult:
        """Answer ``question`` (``history``: earlier user/assistant messages, if any).

        ``resume``: go on from another run of the same question (its messages, tool results and
        trace), as the router does when the model server failed mid-run: nothing gathered is
        lost, and the trace shows every call that ran.

        ``stream``: where progress and the model's text go while the run works.

        ``gate``: which calls wait for a person (None: every call runs); with ``resume`` of a
        paused result, the paused round goes on under the gate's decisions."""
        start = State.ASK_MODEL
        if resume is not None and resume.conversation is not None:
            trace = resume.trace.model_copy(update={"model": self.model.name})
            run = _Run(list(resume.messages), trace, resume.conversation)
            if resume.paused is not None:
                run.pending, start = resume.paused.turn, State.RUN_TOOLS
        else:
            messages = opening_messages(self.settings.system_prompt, question, history)
            calling = getattr(self.model, "tool_calling", None)  # a model written before it
            trace = Trace(question=question, model=self.model.name, tool_calling=calling)
            run = _Run(messages=messages, trace=trace)
        run.stream = stream
        run.gate = gate
        try:
            async with asyncio.timeout(self.settings.request_timeout_s):
                await self._drive(run, start)
        except TimeoutError:
            run.trace.stop_reason = "timeout"
            run.answer = timeout_answer(self.settings.request_timeout_s, run.trace.tool_calls())
        run.trace.total_ms = run.conversation.ms()
        citations = [c for record in run.trace.tool_calls() for c in record.citations]
        return AgentResult(
            answer=run.answer,
            citations=citations,
            trace=run.trace,
            messages=tuple(run.messages),
            conversation=run.conversation,
            paused=run.paused,
        )

    async def _drive(self, run: _Run, state: State) -> None:
        while True:
            if state is State.ASK_MODEL:
                state = await self._ask_model(run)
            elif state is State.RUN_TOOLS:
                state = await self._run_tools(run)
            elif state is State.SYNTHESIZE:
                state = await self._synthesize(run)
            else:
                break
        trace = run.trace
        if state is State.LIMIT:
            trace.stop_reason = "iteration_limit"
            run.answer = limit_answer(self.settings.max_iterations, trace.tool_calls())
        elif state is State.MODEL_ERROR:
            trace.stop_reason = "model_error"
            run.answer = model_error_answer(run.error, trace.tool_calls())
        elif state is State.AWAIT_APPROVAL:
            trace.stop_reason = "awaiting_approval"
        else:
            trace.stop_reason = "answered"

    async def _ask_model(self, run: _Run) -> State:
        turn = await self._call_model(run, self._tools)
        if turn is None:
            return State.MODEL_ERROR
        if not turn.tool_calls:
            run.answer = turn.content or ""
            return State.ANSWERED
        if _repeats_only(turn, run.trace):
            run.pending = turn
            return State.SYNTHESIZE
        if run.trace.iterations >= self.settings.max_iterations:
            return State.LIMIT
        run.pending = turn
        return State.RUN_TOOLS

    async def _synthesize(self, run: _Run) -> State:
        turn = run.pending
        assert turn is not None
        run.pending = None
        run.trace.forced_answer = True
        # The conversation stays well formed: each repeated call gets the result it had before.
        earlier = _answered(run.trace)
        run.messages.append(turn.assistant_message())
        run.messages.extend(
            {"role": "tool", "tool_call_id": c.id, "content": earlier[_request_key(c)]}
            for c in turn.tool_calls
        )
        run.messages.append({"role": "user", "content": SYNTHESIZE_PROMPT})
        turn = await self._call_model(run, [])
        if turn is None:
            return State.MODEL_ERROR
        if turn.tool_calls:  # a server that invents calls with no tools offered
            return State.LIMIT
        run.answer = turn.content or ""
        return State.ANSWERED

    async def _complete(
        self, run: _Run, tools: list[dict[str, Any]], relay: TextRelay | None
    ) -> ModelTurn:
        if relay is None:
            return await self.model.complete(run.messages, tools)
        relay.new_attempt()
        model: TextStreamingModel = self.model  # type: ignore[assignment]  # streams_text said so
        return await model.complete(run.messages, tools, on_text=relay)

    async def _call_model(self, run: _Run, tools: list[dict[str, Any]]) -> ModelTurn | None:
        """One model call (one retry of a transient error), recorded; None when it failed.
        With a stream: progress first, and the reply's text relayed as it arrives."""
        trace = run.trace
        start = run.conversation.ms()
        relay = None
        if run.stream is not None:
            run.stream.progress(
                Progress(
                    "model",
                    f"asking {self.model.name}",
                    {"iteration": trace.iterations, "model": self.model.name},
                )
            )
            run.stream.new_turn()
            if getattr(self.model, "streams_text", False):
                relay = TextRelay(run.stream)
        turn: ModelTurn | None = None
        try:
            try:
                turn = await self._complete(run, tools, relay)
            except ModelError as first:
                if not first.retryable:  # one retry of a transient error (down, 5xx, cut stream)
                    raise
                turn = await self._complete(run, tools, relay)
        except ModelError as exc:
            run.error = str(exc)
            trace.steps.append(
                ModelStep(
                    iteration=trace.iterations,
                    start_ms=start,
                    end_ms=run.conversation.ms(),
                    ttft_ms=None,
                    error=str(exc),
                )
            )
            return None
        finally:  # failed, or cancelled (the request's timeout), after its text was shown
            if relay is not None and relay.sent and turn is None and run.stream is not None:
                run.stream.cut = True
        trace.steps.append(
            ModelStep(
                iteration=trace.iterations,
                start_ms=start,
                end_ms=run.conversation.ms(),
                ttft_ms=None if turn.ttft_s is None else turn.ttft_s * 1000,
                prompt_tokens=turn.prompt_tokens,
                completion_tokens=turn.completion_tokens,
                content=turn.content,
                thought=turn.thought,
                tool_calls=[
                    RequestedCall(id=c.id, name=c.name, arguments_text=c.arguments_text)
                    for c in turn.tool_calls
                ],
                finish_reason=turn.finish_reason,
            )
        )
        trace.prompt_tokens += turn.prompt_tokens
        trace.completion_tokens += turn.completion_tokens
        return turn

    async def _run_tools(self, run: _Run) -> State:
        turn = run.pending
        assert turn is not None
        screen = run.gate.screen(turn, run.messages, run.trace) if run.gate else None
        if screen is not None and screen.waiting:
            run.paused = PausedTurn(turn, screen.waiting)
            return State.AWAIT_APPROVAL
        run.pending = None
        trace = run.trace
        trace.iterations += 1
        start = run.conversation.ms()
        names = [c.name for c in turn.tool_calls]
        if run.stream is not None:
            run.stream.progress(
                Progress(
                    "tools",
                    f"calling {', '.join(names)}",
                    {"iteration": trace.iterations, "tools": names},
                )
            )
        refused = screen.refused if screen is not None else {}
        ran = await self.runner.run_round(
            [c for c in turn.tool_calls if c.id not in refused], run.conversation
        )
        answered = iter(ran)  # in the order of the calls that ran
        records = [
            refused[c.id].record(c, run.conversation) if c.id in refused else next(answered)
            for c in turn.tool_calls
        ]
        if run.stream is not None:
            for r in records:
                ms = round(r.duration_ms, 1)
                run.stream.progress(
                    Progress(
                        "tool",
                        f"{r.tool}: {r.status} ({ms:g} ms)",
                        {"tool": r.tool, "status": r.status, "ms": ms},
                    )
                )
        trace.steps.append(
            ToolStep(
                iteration=trace.iterations,
                parallel=self.runner.parallel and len(records) > 1,
                start_ms=start,
                end_ms=run.conversation.ms(),
                calls=records,
            )
        )
        trace.malformed_tool_calls += sum(r.status == "malformed" for r in records)
        trace.cache_hits += sum(r.status == "cached" for r in records)
        run.messages.append(turn.assistant_message())
        run.messages.extend(
            {"role": "tool", "tool_call_id": r.id, "content": r.observation} for r in records
        )
        return State.ASK_MODEL


def _call_key(name: str, arguments: Any) -> tuple[str, str]:
    return name, json.dumps(arguments, sort_keys=True, separators=(",", ":"))


def _request_key(call: ToolCallRequest) -> tuple[str, str] | None:
    try:
        return _call_key(call.name, json.loads(call.arguments_text or "{}"))
    except ValueError:
        return None


def _answered(trace: Trace) -> dict[tuple[str, str] | None, str]:
    """The observation of each call this run already answered, by tool and arguments."""
    return {
        _call_key(r.tool, r.arguments): r.observation
        for r in trace.tool_calls()
        if r.status in ("ok", "cached") and r.arguments is not None
    }


def _repeats_only(turn: ModelTurn, trace: Trace) -> bool:
    """True when every call of ``turn`` was already answered in this run with the same arguments."""
    done = _answered(trace)
    return all(_request_key(c) in done for c in turn.tool_calls)
