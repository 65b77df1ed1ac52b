"""The agent service object the HTTP API drives: one agent, its metrics and its admission limit.

Admission is a counter, not a queue: beyond ``maxConcurrentRequests`` a request is refused at
once (:class:`Overloaded` → HTTP 429 with Retry-After), so load never piles up without bound.
A sampled share (``onlineEval.sampleRate``) of answered requests is handed to the
:class:`~sleuth.agent.onlineeval.OnlineEvaluator`, which scores it off the request path.

Traces (:mod:`sleuth.core.tracing`): the service starts the tracer of the settings it is given
(and shuts it down), or uses a :class:`~sleuth.core.tracing.Tracing` it is handed (tests); the
HTTP fronts open one :class:`~sleuth.agent.reqspan.RequestSpan` per request
(:meth:`AgentService.request_span`). Every run ends with one log line, ``request ...``, carrying
the trace id when there is one.

Approval (:mod:`sleuth.agent.approval`): each run is given a gate by the service's
:class:`~sleuth.agent.approval.desk.ApprovalDesk`. A run that pauses before calls a person must
approve comes back with :attr:`AgentResult.approval` set and an answer that says what waits and
how to decide; :class:`~sleuth.agent.approval.runs.ApprovalRuns` (``service.approvals``) records
the decision and goes on with the run. Over
``/v1/query`` and ``/v1/chat/completions`` the decision is the next question itself (``approve
apr_...`` / ``reject apr_...: reason``, recognised by :meth:`AgentService.run`); over A2A it is a
reply in the paused task (:mod:`sleuth.agent.a2a_api`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from sleuth.agent.access.caller import Caller
from sleuth.agent.access.control import AccessControl
from sleuth.agent.approval.decision import parse_addressed, refusal_note
from sleuth.agent.approval.desk import ApprovalDesk
from sleuth.agent.approval.gate import TurnGate
from sleuth.agent.approval.pending import Continuation
from sleuth.agent.approval.rules import ApprovalRules
from sleuth.agent.approval.runs import ApprovalRuns
from sleuth.agent.cache import ToolCache
from sleuth.agent.errors import AgentError
from sleuth.agent.events import AnswerStream, RunListener
from sleuth.agent.firststep import FirstStep, ModelRequest
from sleuth.agent.loop import Agent, AgentResult, LoopSettings
from sleuth.agent.metrics import AgentMetrics
from sleuth.agent.onlineeval import OnlineEvaluator
from sleuth.agent.reqspan import RequestSpan
from sleuth.agent.request_checks import Conversation, PromptBudget, check_conversation
from sleuth.agent.router import RouterModel
from sleuth.agent.toolrun import BoundTool, ToolRunner
from sleuth.agent.toolset import bind_tools
from sleuth.agent.trace import Trace
from sleuth.agent.wake import ModelWake, WakingModel
from sleuth.core.api.agent_config import AgentConfig
from sleuth.core.llm import ChatModel, OpenAIChatModel
from sleuth.core.names import EVAL_HEADER
from sleuth.core.tracing import Tracing, TracingSettings, current_trace_id, start_tracing

log = logging.getLogger("sleuth.agent")


class Overloaded(AgentError):
    """Too many requests in flight; retry after ``retry_after_s``."""

    retryable = True

    def __init__(self, limit: int, retry_after_s: int = 1, share: int | None = None) -> None:
        if share is None:
            message = f"the agent is serving its maximum of {limit} concurrent requests"
        else:  # the caller's fair share (sleuth.agent.access.fairshare)
            message = (
                f"this caller has its share ({share}) of the agent's {limit} concurrent "
                "requests in flight"
            )
        super().__init__(message)
        self.retry_after_s = retry_after_s


class AgentService:
    def __init__(
        self,
        config: AgentConfig,
        *,
        name: str = "sleuth-agent",
        tools: dict[str, BoundTool] | None = None,
        tracing: Tracing | TracingSettings | None = None,
        audit_sink: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config
        self.name = name
        self.metrics = AgentMetrics(name)
        self.access = AccessControl(
            config.access,
            agent=name,
            max_concurrent=config.max_concurrent_requests,
            registry=self.metrics.registry,
            audit_sink=audit_sink,
        )
        if isinstance(tracing, TracingSettings):
            self.tracing = start_tracing(tracing, self._spans_dropped)
            self._owns_tracing = True
        else:
            self.tracing = tracing or Tracing.disabled()
            self._owns_tracing = False
        request = ModelRequest.of(config)
        env = config.model.api_key_env
        api_key = os.environ.get(env) if env else None
        self.model = OpenAIChatModel(
            str(config.model.endpoint),
            config.model.served_model_name,
            timeout_s=config.model.timeout_seconds,
            api_key=api_key,
            tracing=self.tracing,
            **request.client_options(),
        )
        self.runner = runner = ToolRunner(
            tools if tools is not None else bind_tools(config),
            ToolCache() if config.tool_cache_ttl_seconds > 0 else None,
            parallel=config.parallel_tool_calls,
            max_parallel=config.max_parallel_tool_calls,
            tracing=self.tracing,
        )
        settings = LoopSettings.from_config(config)
        planner = config.planner
        router = Agent(RouterModel(), runner, settings)
        model: ChatModel = self.model
        wake: ModelWake | None = None
        wait = config.model.wake_wait_seconds
        if wait is not None:  # the model server may sleep at zero replicas: wait, and wake it
            gauge = self.metrics.waiting_for_model.labels(name)
            wake = ModelWake(self.model.ping, wait, gauge)
            model = WakingModel(self.model, wake)
        self.wake = wake  # POST /v1/eval/wake (sleuth.agent.evalwake) waits with it too
        self.agent = router if planner.mode == "router" else Agent(model, runner, settings)
        self.fallback = router if planner.mode == "llm" and planner.fallback_to_router else None
        self.online_eval = OnlineEvaluator(
            config, self.metrics.online, tracer=self.tracing.tracer, wake=wake
        )
        self.desk = ApprovalDesk(
            name,
            ApprovalRules(config.tools),
            config.approvals,
            self.metrics.registry,
            self.access.audit,
        )
        self.approvals = ApprovalRuns(self)
        self.in_flight = 0
        self.budget = self._budget(settings.system_prompt)
        # What every run's first model call sends (GET /v1/eval/first-step, sleuth eval tsa).
        self.first_step = FirstStep(
            system_prompt=settings.system_prompt, tools=self.agent.tools, model=request
        )

    def _budget(self, system_prompt: str) -> PromptBudget | None:
        model = self.config.model
        if model.max_model_len is None or self.config.planner.mode == "router":
            return None
        tools = json.dumps(self.runner.openai_tools(), ensure_ascii=False)
        fixed = len(system_prompt.encode()) + len(tools.encode())
        return PromptBudget(model.max_model_len, model.max_tokens, fixed)

    def check(self, conversation: Conversation) -> None:
        """Raise :class:`RequestRejected` for a conversation over the limits."""
        check_conversation(conversation, self.config.limits, self.budget)

    def rejected(self, status: int) -> None:
        """Count a refused request by its HTTP status."""
        reasons = {408: "slow_body", 413: "too_large", 429: "overloaded"}
        self.metrics.rejected_requests.labels(self.name, reasons.get(status, "invalid")).inc()

    async def start(self) -> None:
        """Start what runs beside the requests (the online evaluator's workers, the refresh of
        API keys and JWKS)."""
        await self.access.start()
        await self.online_eval.start()
        await self.desk.start()

    async def aclose(self) -> None:
        await self.desk.aclose()
        await self.access.aclose()
        await self.online_eval.aclose()
        await self.model.aclose()
        if self._owns_tracing:  # export what is queued, within a bound (a dead collector)
            await asyncio.to_thread(self.tracing.shutdown, 5.0)

    def _spans_dropped(self, count: int, reason: str) -> None:
        self.metrics.spans_dropped.labels(self.name, reason).inc(count)

    def request_span(self, endpoint: str, headers: Mapping[str, str]) -> RequestSpan:
        """The root span of a request to ``endpoint`` (``headers``: the client's, for its
        ``traceparent``)."""
        model = None if self.config.planner.mode == "router" else self.model.name
        return RequestSpan(self.tracing, self.name, endpoint, headers, model)

    def full(self) -> bool:
        """True at ``maxConcurrentRequests``: a new request would be refused."""
        return self.in_flight >= self.config.max_concurrent_requests

    def admit(self, caller: Caller | None = None) -> None:
        """Count a request in, or raise :class:`Overloaded` at the limit or at ``caller``'s fair
        share of it. Pair with release(caller)."""
        limit = self.config.max_concurrent_requests
        if self.full():
            self.metrics.rejected_requests.labels(self.name, "overloaded").inc()
            raise Overloaded(limit)
        if caller is not None and self.access.fair.try_acquire(caller.name) is not None:
            self.metrics.rejected_requests.labels(self.name, "overloaded").inc()
            raise Overloaded(limit, share=self.access.fair.share(caller.name))
        self.in_flight += 1
        self.metrics.in_flight.labels(self.name).set(self.in_flight)

    def release(self, caller: Caller | None = None) -> None:
        if caller is not None:
            self.access.fair.release(caller.name)
        self.in_flight -= 1
        self.metrics.in_flight.labels(self.name).set(self.in_flight)

    def sample_of(self, caller: Caller, headers: Mapping[str, str]) -> bool:
        """False (keep out of online sampling) for the eval header of a caller granted
        ``evaluation``; the header of any other caller is ignored."""
        return not (caller.evaluation and EVAL_HEADER.lower() in headers)

    async def answer(
        self,
        question: str,
        history: list[dict[str, Any]],
        endpoint: str,
        sample: bool = True,
        caller: Caller | None = None,
    ) -> AgentResult:
        """Admit, run the loop, record metrics (and the online-eval sample), release."""
        self.admit(caller)
        try:
            return await self.run(question, history, endpoint, sample, caller=caller)
        finally:
            self.release(caller)

    async def run(
        self,
        question: str,
        history: list[dict[str, Any]],
        endpoint: str,
        sample: bool = True,
        listener: RunListener | None = None,
        caller: Caller | None = None,
        task_id: str | None = None,
        on_expired: Continuation | None = None,
    ) -> AgentResult:
        """Run the loop for an already admitted request; ``sample=False`` keeps it out of online
        evaluation (the scheduled eval's own questions: it scores them itself). ``listener``
        receives progress and the answer's text as it is written (:mod:`sleuth.agent.events`);
        the text it receives ends with the final answer. ``caller``: who asked (the audit
        record and the per-caller counters; None only for in-process use). ``task_id``: the
        A2A task the run belongs to (a pause waits under its id); ``on_expired``: how a pause
        goes on when nobody decides in time (default: the answer waits for its caller).

        A question ``approve apr_...`` / ``reject apr_...: reason`` from a caller is its decision
        on one of its waiting runs, which goes on instead."""
        reply = parse_addressed(question) if self.desk.rules and caller is not None else None
        if reply is not None and caller is not None:
            return await self.approvals.addressed(reply, caller, endpoint, listener)
        stream = AnswerStream(listener) if listener is not None else None
        gate = self.desk.gate(caller)
        try:
            result = await self.loop(question, history, stream, gate)
            result = await self.approvals.hold(
                result, caller, endpoint, question, stream, task_id, on_expired
            )
        except asyncio.CancelledError:
            if caller is not None:
                self.access.refused(caller, endpoint, "cancelled", question)
            raise
        return self.finish(result, question, endpoint, caller, stream, sample)

    async def loop(
        self,
        question: str,
        history: list[dict[str, Any]],
        stream: AnswerStream | None,
        gate: TurnGate | None,
        resume: AgentResult | None = None,
    ) -> AgentResult:
        """One leg of a run: the agent's loop, and the router when the model server fails."""
        result = await self.agent.run(question, history, resume=resume, stream=stream, gate=gate)
        if result.trace.stop_reason == "model_error" and self.fallback is not None:
            result = await self._degrade(result, question, history, stream, gate)
        return result

    def finish(
        self,
        result: AgentResult,
        question: str,
        endpoint: str,
        caller: Caller | None,
        stream: AnswerStream | None,
        sample: bool,
        leg: Trace | None = None,
    ) -> AgentResult:
        """The answer noted (calls refused for want of approval), streamed, measured, audited,
        offered to online evaluation. ``leg``: what this leg of a resumed run added to its
        trace — what the metrics and the audit count (the rest was counted when it paused)."""
        note = refusal_note(result.trace) if result.approval is None else ""
        if note:
            if stream is not None:
                stream.finish(result.answer)
                stream.new_turn()
                stream.write(note)
            result = dataclasses.replace(result, answer=f"{result.answer}\n\n{note}".strip())
        if stream is not None:
            stream.finish(result.answer)
            result = dataclasses.replace(result, text_cut=stream.cut)
        measured = leg if leg is not None else result.trace
        self.metrics.observe_trace(measured, endpoint)
        trace_id = current_trace_id()
        _log_request(endpoint, result, trace_id, caller)
        paused = result.approval is not None
        if caller is not None:
            outcome = "paused" if paused else "answered"
            self.access.ran(caller, endpoint, question, measured, trace_id, outcome)
        if sample and not paused:
            self.online_eval.offer(question, result.answer, result.trace)
        return result

    async def _degrade(
        self,
        failed: AgentResult,
        question: str,
        history: list[dict[str, Any]],
        stream: AnswerStream | None,
        gate: TurnGate | None = None,
    ) -> AgentResult:
        """The model server failed: the deterministic router goes on from the evidence already
        gathered (the failed run's tool results stay in the conversation and the trace), and
        the answer says so."""
        assert self.fallback is not None
        error = next((s.error for s in failed.trace.model_steps() if s.error), "unknown error")
        routed = await self.fallback.run(question, history, resume=failed, stream=stream, gate=gate)
        routed.trace.degraded = True
        self.metrics.degraded.labels(self.name).inc()
        note = (
            f"The model server is unavailable ({error}); this answer comes from the "
            "deterministic router, without a language model."
        )
        return dataclasses.replace(routed, answer=f"{note}\n{routed.answer}")

    async def readiness(self) -> tuple[bool, str]:
        """(ready, status): ready unless the model is down and there is no router to fall to."""
        if self.config.planner.mode == "router":
            return True, "ready"
        problem = await self.model.ping()
        if problem is None:
            return True, "ready"
        if self.fallback is not None:
            return True, f"degraded: {problem}"
        return False, problem


def _log_request(
    endpoint: str, result: AgentResult, trace_id: str | None, caller: Caller | None
) -> None:
    """One line per run (logfmt-like): how it ended, how long, and its trace when traced."""
    run = result.trace
    line = (
        f"request endpoint={endpoint} stop={run.stop_reason} iterations={run.iterations} "
        f"tool_calls={len(run.tool_calls())} ms={run.total_ms:.1f}"
    )
    if caller is not None:
        line += f" caller={caller.name}"
    if run.degraded:
        line += " degraded=true"
    if trace_id is not None:
        line += f" trace_id={trace_id}"
    log.info(line, extra={"trace_id": trace_id, "endpoint": endpoint})
