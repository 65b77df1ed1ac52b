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
"""

from __future__ import annotations

from a2a.helpers.proto_helpers import new_data_part, new_text_part
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

from sleuth.agent.access.caller import Caller
from sleuth.agent.access.tasks import BoundedTaskStore, CallerContextBuilder, CallerUser
from sleuth.agent.errors import RequestRejected
from sleuth.agent.events import AnswerText, Finished, Progress, RunListener, follow
from sleuth.agent.loop import AgentResult
from sleuth.agent.reqspan import RequestSpan
from sleuth.agent.request_checks import Conversation
from sleuth.agent.service import AgentService, Overloaded
from sleuth.core.http.jsonrpc_intake import JsonRpcIntake

A2A_PATH = "/a2a"
ANSWER_ARTIFACT = "answer"


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

    def __init__(self, service: AgentService) -> None:
        self.service = service

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
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
            await self._run(question, updater, span, caller)
        finally:
            span.fail("cancelled")  # no-op when the run finished it
            service.release(caller)

    async def _run(
        self, question: str, updater: TaskUpdater, span: RequestSpan, caller: Caller
    ) -> None:
        async def run(listener: RunListener) -> AgentResult:
            with span.running():
                result = await self.service.run(
                    question, [], "a2a", listener=listener, caller=caller
                )
            span.finish(result, question)
            return result

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
                await updater.add_artifact(
                    [
                        new_text_part(result.answer),
                        new_data_part({"citations": result.citations, **span.body()}),
                    ],
                    artifact_id=ANSWER_ARTIFACT,
                    name=ANSWER_ARTIFACT,
                    append=False,
                    last_chunk=True,
                )
                await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """The SDK has cancelled :meth:`execute` (and so the loop); say so on the task."""
        updater = TaskUpdater(
            event_queue=event_queue,
            task_id=context.task_id or "",
            context_id=context.context_id or "",
        )
        await updater.cancel()


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
    handler = DefaultRequestHandlerV2(
        agent_executor=AgentTaskExecutor(service),
        task_store=BoundedTaskStore(
            service.config.a2a.task_ttl_seconds, service.config.a2a.max_stored_tasks
        ),
        agent_card=agent_card(service, placeholder),
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
