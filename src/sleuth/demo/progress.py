"""Progress while a slow model works: a line per model turn and a ticker on stderr.

A model on a CPU takes tens of seconds per turn, so ``sleuth ask --planner local`` wraps its
model in :class:`ProgressModel`: before each call it says which turn starts, every
``interval_s`` seconds that the call is still running, and after it what the model decided
(the tools it asked for, or that it answered) and how long it took. The loop itself is unchanged:
this is a :class:`~sleuth.core.llm.ChatModel` around another.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from typing import Any

from sleuth.core.llm import ChatModel, ModelTurn


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class ProgressModel:
    """``inner`` with progress lines written through ``write`` (default: stderr)."""

    def __init__(
        self,
        inner: ChatModel,
        *,
        interval_s: float = 10.0,
        write: Callable[[str], None] = _stderr,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.tool_calling = inner.tool_calling
        self._interval_s = interval_s
        self._write = write
        self._started = time.monotonic()

    def _say(self, text: str) -> None:
        self._write(f"[{time.monotonic() - self._started:6.1f} s] {text}")

    async def _tick(self, turn: int, since: float) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            self._say(f"model turn {turn}: still working ({time.monotonic() - since:.0f} s)")

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelTurn:
        turn = sum(1 for m in messages if m.get("role") == "assistant") + 1
        results = sum(1 for m in messages if m.get("role") == "tool")
        after = f" (after {results} tool result{'s' if results != 1 else ''})" if results else ""
        self._say(f"model turn {turn}: asking {self.name}{after}")
        since = time.monotonic()
        ticker = asyncio.create_task(self._tick(turn, since))
        try:
            reply = await self.inner.complete(messages, tools)
        except Exception as exc:
            self._say(f"model turn {turn}: failed after {time.monotonic() - since:.1f} s: {exc}")
            raise
        finally:
            ticker.cancel()
        took = time.monotonic() - since
        if reply.thought:
            self._say(f"model turn {turn}: thought: {reply.thought}")
        if reply.tool_calls:
            names = ", ".join(c.name for c in reply.tool_calls)
            self._say(f"model turn {turn}: calls {names} ({took:.1f} s); running the tools")
        else:
            self._say(f"model turn {turn}: answered ({took:.1f} s)")
        return reply
