"""The agent as an A2A agent (the published ``a2a-sdk``), beside the OpenAI API on the same port.

``GET  /.well-known/agent-card.json``  the agent card: name, description, one skill per bound
                                       tool (its description), streaming, the endpoint below
``POST /a2a``                          JSON-RPC 2.0: ``SendMessage``, ``SendStreamingMessage``,
                                       ``GetTask``, ``CancelTask`` (and the SDK's other methods)

A message's text is the question; each task is one run of the loop (earlier tasks of the same
context are not passed as history). A task goes ``submitted`` → ``working`` (a status message per
progress event: model asked, tools started, each tool done) → ``completed``, with one artifact,
``answer``: its text streams in chunks as the model writes it (``append``), and the last chunk
replaces them with the whole answer plus a data part ``{"citations": [...]}`` (and
``"traceId"`` when the task is traced: one trace per task, root ``invoke_agent``). Cancelling the
task cancels the loop (tool calls in flight included).

The same limits as the OpenAI front: the body's size and read time
(:class:`~sleuth.core.http.request_guard.RequestGuard`), the question's
(``limits.maxQuestionChars``, the prompt against ``model.maxModelLen``: JSON-RPC "invalid params"
naming ``message.parts``) and admission (at ``maxConcurrentRequests`` a new task is ``rejected`` at
once, with a message saying to retry). Only ``SendMessage``/``SendStreamingMessage`` take an
admission slot; ``GetTask`` and ``CancelTask`` are always served. Tasks live in memory, per replica.
The body is checked before the SDK parses it
(:class:`~sleuth.core.http.jsonrpc_intake.JsonRpcIntake`: UTF-8, nesting at most 64 levels, no
lone surrogate), refusals as JSON-RPC errors.

Approval (:mod:`sleuth.agent.approval`): a run that pauses before calls a person must approve
puts its task in ``input-required``, with a status message holding the text (what waits, how to
decide) and a data part ``{"approval": {"id", "calls": [{"id", "tool", "arguments", "why"}],
"expiresAt"}}``. The task's owner answers in the same task (a message with its ``taskId``):
``approve`` or ``reject: <reason>`` as text, or a data part ``{"decision": "approve" | "reject",
"reason": "..."}``; the task goes back to ``working`` and on to ``completed``. Anything else
leaves it in ``input-required``, asking again. Nobody answering in time: the run goes on without
the calls and the task completes on its own (its answer says the calls were not run). Another
caller's message to the task is refused by the SDK (the task is "not found" for it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from a2a.helpers.proto_helpers import get_data_parts, new_data_part, new_text_part
from a2a.server.agent_execution.agent_executor import AgentExecutor
from a2a.server.agent_execution.context import RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import create_jsonrpc_routes
from a2a.server.tasks.task_updater import TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from a2a.utils.errors import InvalidParamsError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from sleuth.agent.a2a_parts import ANSWER_ARTIFACT, answer_artifact, approval_data
from sleuth.agent.access.caller import Caller
from sleuth.agent.access.tasks import BoundedTaskStore, CallerContextBuilder, CallerUser
from sleuth.agent.approval.a2a import task_completer
from sleuth.agent.approval.decision import parse_reply
from sleuth.agent.errors import RequestRejected
from sleuth.agent.events import AnswerText, Finished, Progress, RunListener, follow
from sleuth.agent.loop import AgentResult
from sleuth.agent.reqspan import RequestSpan
from sleuth.agent.request_checks import Conversation
from sleuth.agent.service import AgentService, Overloaded
from sleuth.core.http.jsonrpc_intake import JsonRpcIntake

A2A_PATH = "/a2a"
# An ActiveTask idle in input-required is released after this long (the SDK recreates it from
# the store when the decision comes): a waiting task holds no background tasks for long.
INTERRUPTED_TASK_RELEASE_S = 30.0


def agent_card(service: AgentService, base_url: str) -> AgentCard:
    """The card of ``service`` reached at ``base_url`` (no trailing slash)."""
    tools = [bound.tool.spec for bound in service.runner.tools.values()]
    names = ", ".join(t.name for t in tools) or "no tools"
    description = service.config.a2a.description or (
        f"Answers questions with cited evidence, using {names} (sleuth agent)."
    )
    skills = [
        AgentSkill(
            id=t.name,
            name=t.name,
            description=t.description,
            tags=["tool", t.name],
            input_modes=["text/plain"],
            output_modes=["text/plain", "application/json"],
        )
        for t in tools
    ]
    schemes, requirements = security_of(service)
    return AgentCard(
        name=service.name,
        security_schemes=schemes,
        security_requirements=requirements,
        description=description,
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=skills,
        supported_interfaces=[
            AgentInterface(
                protocol_binding="JSONRPC",
                protocol_version="1.0",
                url=f"{base_url}{A2A_PATH}",
            )
        ],
    )


def security_of(
    service: AgentService,
) -> tuple[dict[str, SecurityScheme], list[SecurityRequirement]]:
    """The schemes the card declares (either one admits): API keys and issuers' JWTs, as
    configured in ``access``; none for a local agent (no ``access``, loopback only)."""
    access = service.config.access
    if access is None:
        return {}, []
    schemes: dict[str, SecurityScheme] = {}
    if any(c.api_key_directory for c in access.callers):
        schemes["apiKey"] = SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(
                scheme="bearer",
                description="An API key issued to the caller: Authorization: Bearer <key>.",
            )
        )
    if access.issuers:
        audiences = sorted({a for i in access.issuers for a in i.audiences})
        schemes["jwt"] = SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(
                scheme="bearer",
                bearer_format="JWT",
                description="A JWT of an accepted issuer (a Kubernetes ServiceAccount token "
                "included) whose audience is one of: " + ", ".join(audiences) + ".",
            )
        )
    requirements = [SecurityRequirement(schemes={name: StringList()}) for name in schemes]
    return schemes, requirements


class AgentTaskExecutor(AgentExecutor):
    """Runs one task as one run of the agent's loop, reporting as it goes."""

    def __init__(self, service: AgentService, store: BoundedTaskStore) -> None:
        self.service = service
        self.completes_task = task_completer(service.approvals, store)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        current = context.current_task
        if current is not None and current.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await self._decision(context, event_queue)
            return
        if current is not None and current.status.state in _ENDED:
            state = TaskState.Name(current.status.state).removeprefix("TASK_STATE_").lower()
            raise InvalidParamsError(
                f"task {current.id} is {state}: it takes no more messages",
                data={"field": "message.taskId"},
            )
        service = self.service
        task_id, context_id = context.task_id or "", context.context_id or ""
        question = context.get_user_input()
        conversation = Conversation(
            question=question,
            history=[],
            question_field="message.parts",
            history_field="message",
            history_count=0,
        )
        caller = _caller(context)
        try:
            service.check(conversation)
        except RequestRejected as exc:
            service.rejected(exc.status)
            service.access.refused(caller, "a2a", "invalid", None)
            raise InvalidParamsError(str(exc), data={"field": exc.field}) from exc
        updater = TaskUpdater(event_queue=event_queue, task_id=task_id, context_id=context_id)
        first = Task(id=task_id, context_id=context_id, status=TaskStatus())
        first.status.state = TaskState.TASK_STATE_SUBMITTED
        if context.message is not None:
            first.history.append(context.message)
        await event_queue.enqueue_event(first)
        try:
            service.admit(caller)
        except Overloaded as exc:
            service.access.refused(caller, "a2a", "overloaded", question)
            text = f"{exc}; retry after {exc.retry_after_s} s"
            await updater.reject(updater.new_agent_message(parts=[new_text_part(text)]))
            return
        span = service.request_span("a2a", _headers(context))
        try:
            await updater.start_work()

            async def run(listener: RunListener) -> AgentResult:
                with span.running():
                    result = await service.run(
                        question,
                        [],
                        "a2a",
                        listener=listener,
                        caller=caller,
                        task_id=task_id,
                        on_expired=self.completes_task,
                    )
                span.finish(result, question)
                return result

            await self._follow(run, updater, span)
        finally:
            span.fail("cancelled")  # no-op when the run finished it
            service.release(caller)

    async def _decision(self, context: RequestContext, event_queue: EventQueue) -> None:
        """A message to a task that waits for a decision: the owner's approve or reject."""
        service = self.service
        task_id, context_id = context.task_id or "", context.context_id or ""
        caller = _caller(context)
        updater = TaskUpdater(event_queue=event_queue, task_id=task_id, context_id=context_id)
        pending = service.desk.pending.take_task(caller, task_id)
        if pending is None:  # expired a moment ago (its continuation completes the task)
            raise InvalidParamsError(
                f"no call of task {task_id} waits for a decision any more (expired or decided)",
                data={"field": "message.taskId"},
            )
        data = get_data_parts(context.message.parts) if context.message is not None else []
        reply = parse_reply(context.get_user_input(), data)
        ask = "Reply 'approve' or 'reject: <reason>' to decide on the waiting call."
        if reply is not None:
            try:
                service.admit(caller)
            except Overloaded as exc:
                ask = f"{exc}: your decision was not taken; send it again in a moment."
                reply = None
        if reply is None:
            service.desk.pending.add(pending)  # still waiting
            message = updater.new_agent_message(
                parts=[new_text_part(ask), new_data_part(approval_data(pending))]
            )
            await updater.requires_input(message=message)
            return
        span = service.request_span("a2a", _headers(context))
        try:
            await updater.start_work()

            async def run(listener: RunListener) -> AgentResult:
                with span.running():
                    result = await service.approvals.decide(caller, pending, reply, "a2a", listener)
                span.finish(result, pending.question)
                return result

            await self._follow(run, updater, span)
        finally:
            span.fail("cancelled")
            service.release(caller)

    async def _follow(
        self,
        run: Callable[[RunListener], Awaitable[AgentResult]],
        updater: TaskUpdater,
        span: RequestSpan,
    ) -> None:
        streamed = False
        async for event in follow(run):
            if isinstance(event, AnswerText):
                await updater.add_artifact(
                    [new_text_part(event.text)],
                    artifact_id=ANSWER_ARTIFACT,
                    name=ANSWER_ARTIFACT,
                    append=streamed,
                    last_chunk=False,
                )
                streamed = True
            elif isinstance(event, Progress):
                message = updater.new_agent_message(
                    parts=[new_text_part(event.message), new_data_part(event.as_json())]
                )
                await updater.update_status(TaskState.TASK_STATE_WORKING, message=message)
            elif isinstance(event, Finished):
                result = event.result
                if result.approval is not None:
                    message = updater.new_agent_message(
                        parts=[
                            new_text_part(result.answer),
                            new_data_part(approval_data(result.approval)),
                        ]
                    )
                    await updater.requires_input(message=message)
                    return
                answer = answer_artifact(result, span.body())
                await updater.add_artifact(
                    list(answer.parts),
                    artifact_id=ANSWER_ARTIFACT,
                    name=ANSWER_ARTIFACT,
                    append=False,
                    last_chunk=True,
                )
                await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """The SDK has cancelled :meth:`execute` (and so the loop); say so on the task. A task
        that waited for a decision waits no more: its calls are refused, on the record."""
        pending = self.service.desk.pending.take_task(_caller(context), context.task_id or "")
        if pending is not None:
            self.service.desk.decide(pending, "refused", pending.caller, "the task was cancelled")
        updater = TaskUpdater(
            event_queue=event_queue,
            task_id=context.task_id or "",
            context_id=context.context_id or "",
        )
        await updater.cancel()


_ENDED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_REJECTED,
    }
)


def _caller(context: RequestContext) -> Caller:
    """The task's caller (the user :class:`CallerContextBuilder` put on the call)."""
    call = context.call_context
    user = call.user if call is not None else None
    if not isinstance(user, CallerUser):
        raise RuntimeError("an A2A task without a caller: the access middleware is not installed")
    return user.caller


def _headers(context: RequestContext) -> dict[str, str]:
    """The HTTP headers of the JSON-RPC request, when the SDK passed them on (its
    ``traceparent`` makes the task's trace a child of the caller's)."""
    call = context.call_context
    raw = call.state.get("headers") if call is not None else None
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def a2a_routes(service: AgentService) -> list[BaseRoute]:
    """The card route and the JSON-RPC route of ``service``."""
    configured = service.config.a2a.public_url
    placeholder = str(configured).rstrip("/") if configured else "http://localhost"
    store = BoundedTaskStore(
        service.config.a2a.task_ttl_seconds, service.config.a2a.max_stored_tasks
    )
    handler = DefaultRequestHandlerV2(
        agent_executor=AgentTaskExecutor(service, store),
        task_store=store,
        agent_card=agent_card(service, placeholder),
        interrupted_task_timeout=INTERRUPTED_TASK_RELEASE_S,
    )

    def base_url(request: Request) -> str:
        return str(configured or request.base_url).rstrip("/")

    async def card(request: Request) -> Response:
        return JSONResponse(agent_card_to_dict(agent_card(service, base_url(request))))

    routes: list[BaseRoute] = [Route(AGENT_CARD_WELL_KNOWN_PATH, card, methods=["GET"])]
    for route in create_jsonrpc_routes(
        handler, rpc_url=A2A_PATH, context_builder=CallerContextBuilder()
    ):
        route.app = JsonRpcIntake(route.app)  # the body checked before the SDK parses it
        routes.append(route)
    return routes
