"""A2A tasks that stay with their caller, for a while, and not without bound.

The a2a-sdk keeps tasks per *owner*, the user of each call's context. :class:`CallerContextBuilder`
makes that user the request's :class:`~sleuth.agent.access.caller.Caller` (resolved by the access
middleware; the SDK never sees who else might be asking), and drops the ``Authorization`` header
from the headers the SDK keeps in the context. So ``ListTasks``, ``GetTask``, ``CancelTask`` and
``SubscribeToTask`` reach only the caller's own tasks: another caller's task id is "not found".

:class:`BoundedTaskStore` wraps the SDK's in-memory store: a task is forgotten ``ttl_s`` after its
last update, and beyond ``max_tasks`` stored tasks the least recently updated is forgotten first —
so a replica's memory does not grow with every task it ever ran.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable

from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.tasks.inmemory_task_store import InMemoryTaskStore
from a2a.server.tasks.task_store import TaskStore
from a2a.types import a2a_pb2
from a2a.types.a2a_pb2 import Task
from starlette.requests import Request

from sleuth.agent.access.caller import Caller, caller_of_scope

DEFAULT_TASK_TTL_S = 3600.0
DEFAULT_MAX_TASKS = 1000


class CallerUser(User):
    """The A2A user of a call: the caller, as the owner of its tasks."""

    def __init__(self, caller: Caller) -> None:
        self.caller = caller

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return owner_of(self.caller)


def owner_of(caller: Caller) -> str:
    """Whose tasks a caller sees: a key's caller, or one token subject of a caller (two
    workloads admitted by the same claim do not share tasks)."""
    if caller.proof == "token":
        return f"{caller.name}\x00{caller.subject}"
    return caller.name


class CallerContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's context, with the caller as user and no credential in its headers."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        headers = context.state.get("headers")
        if isinstance(headers, dict):
            context.state["headers"] = {
                k: v for k, v in headers.items() if k.lower() != "authorization"
            }
        return context

    def build_user(self, request: Request) -> User:
        return CallerUser(caller_of_scope(request.scope))


def _owner(context: ServerCallContext | None) -> str:
    user = context.user if context is not None else None
    if not isinstance(user, CallerUser):  # never served: the access middleware runs first
        raise PermissionError("an A2A call without a caller")
    return user.user_name


class BoundedTaskStore(TaskStore):
    """The SDK's in-memory store, per caller, with a time-to-live and a bound."""

    def __init__(
        self,
        ttl_s: float = DEFAULT_TASK_TTL_S,
        max_tasks: int = DEFAULT_MAX_TASKS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = InMemoryTaskStore(owner_resolver=_owner)
        self.ttl_s = ttl_s
        self.max_tasks = max_tasks
        self.clock = clock
        # (owner, task id) -> (last update, a context of that owner), oldest update first
        self._entries: OrderedDict[tuple[str, str], tuple[float, ServerCallContext]] = OrderedDict()
        self._lock = asyncio.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    async def _forget(self, key: tuple[str, str]) -> None:
        _, context = self._entries.pop(key)
        await self.inner.delete(key[1], context)

    async def _expire(self) -> None:
        now = self.clock()
        while self._entries:
            key, (updated, _) = next(iter(self._entries.items()))
            if now - updated <= self.ttl_s and len(self._entries) <= self.max_tasks:
                return
            await self._forget(key)

    async def save(self, task: Task, context: ServerCallContext) -> None:
        key = (_owner(context), task.id)
        async with self._lock:
            await self.inner.save(task, context)
            self._entries[key] = (self.clock(), context)
            self._entries.move_to_end(key)
            await self._expire()

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        async with self._lock:
            await self._expire()
        return await self.inner.get(task_id, context)

    async def list(
        self, params: a2a_pb2.ListTasksRequest, context: ServerCallContext
    ) -> a2a_pb2.ListTasksResponse:
        async with self._lock:
            await self._expire()
        return await self.inner.list(params, context)

    async def update(self, owner: str, task_id: str, change: Callable[[Task], bool]) -> bool:
        """Change ``owner``'s stored task ``task_id`` outside any request (``change`` says
        whether it changed anything): how a task waiting for input ends when nobody answers.
        False when the task is gone or unchanged."""
        async with self._lock:
            entry = self._entries.get((owner, task_id))
            if entry is None:
                return False
            context = entry[1]
            task = await self.inner.get(task_id, context)
            if task is None or not change(task):
                return False
            await self.inner.save(task, context)
            self._entries[(owner, task_id)] = (self.clock(), context)
            self._entries.move_to_end((owner, task_id))
            return True

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        async with self._lock:
            self._entries.pop((_owner(context), task_id), None)
            await self.inner.delete(task_id, context)


__all__ = [
    "DEFAULT_MAX_TASKS",
    "DEFAULT_TASK_TTL_S",
    "BoundedTaskStore",
    "CallerContextBuilder",
    "CallerUser",
    "owner_of",
]
