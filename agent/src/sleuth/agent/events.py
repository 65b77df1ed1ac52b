"""What a run tells a listener while it works: answer text as it is written, and progress.

The loop (:mod:`sleuth.agent.loop`) calls a :data:`RunListener` with

- :class:`AnswerText` — a piece of the answer, in order. The pieces of one run, joined, are what a
  streaming client shows: the final model turn's text token by token as the model server streams
  it (or whole, from a model that does not stream, from the router, and for the honest answers of
  a run that hit its limit, timed out or lost its model). Text a model writes before tool calls in
  the same turn is relayed too, as chat UIs show it; the non-streamed answer is the final turn's
  text only.
- :class:`Progress` — a step began or ended (``model`` asked, ``tools`` started, ``tool`` done),
  with a short human-readable ``message`` and machine-readable ``data``.

A listener must not block: it is called on the event loop, between the loop's steps.
:func:`follow` is how the HTTP fronts (OpenAI streaming, A2A) use it: it runs the request and
yields its events as they come, then its result; leaving early cancels the run. (Tracing,
issue 18, can hang off the same events.)
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class AnswerText:
    text: str


@dataclass(frozen=True, slots=True)
class Progress:
    kind: Literal["model", "tools", "tool"]
    message: str
    data: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, **self.data}


RunEvent = AnswerText | Progress
RunListener = Callable[[RunEvent], None]


@dataclass(frozen=True, slots=True)
class Finished(Generic[T]):
    """The end of a followed run: its result."""

    result: T


async def follow(
    run: Callable[[RunListener], Awaitable[T]],
) -> AsyncIterator[RunEvent | Finished[T]]:
    """Run ``run(listener)`` as a task; yield each event it reports, then :class:`Finished`
    with its result (its exception, if it failed, propagates). Closing the iterator early (the
    client went away, the task was cancelled) cancels the run."""
    queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()

    async def main() -> T:
        try:
            return await run(queue.put_nowait)
        finally:
            queue.put_nowait(None)

    task = asyncio.ensure_future(main())
    try:
        while (event := await queue.get()) is not None:
            yield event
        yield Finished(await task)
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


class AnswerStream:
    """All the answer text of one request, written through one listener.

    Each model turn starts a new paragraph (a blank line once text was shown).
    :meth:`finish` writes the authoritative answer unless the text shown already ends with it:
    a streamed answer is not repeated, and a run whose answer was never streamed (the router, a
    model that does not stream, an honest limit or failure answer) still shows it.

    ``cut`` is set when text of a model reply was shown and that reply then failed (its stream
    cut, its retry failed too, the request timed out under it): what the client has is not the
    complete answer, and the OpenAI front ends the stream with ``finish_reason: "length"``.
    """

    def __init__(self, listener: RunListener) -> None:
        self.listener = listener
        self.text = ""
        self.cut = False  # the text shown holds a model reply that never completed
        self._paragraph = False

    def progress(self, event: Progress) -> None:
        self.listener(event)

    def new_turn(self) -> None:
        self._paragraph = bool(self.text)

    def write(self, text: str) -> None:
        if not text:
            return
        if self._paragraph:
            text, self._paragraph = "\n\n" + text, False
        self.text += text
        self.listener(AnswerText(text))

    def finish(self, answer: str) -> None:
        if answer and not self.text.endswith(answer):
            self.new_turn()
            self.write(answer)


class TextRelay:
    """Relays one model turn's text into an :class:`AnswerStream`, attempt after attempt.

    A retried model call (after a cut stream) writes its text again from the start; the relay
    passes on only what goes beyond what was already sent. If the retry says something else,
    its text follows in a new paragraph.
    """

    def __init__(self, stream: AnswerStream) -> None:
        self._stream = stream
        self.sent = ""
        self._seen = ""
        self._diverged = False

    def new_attempt(self) -> None:
        self._seen = ""
        self._diverged = False

    def __call__(self, text: str) -> None:
        self._seen += text
        if self._diverged:
            self._send(text)
        elif self._seen.startswith(self.sent):
            self._send(self._seen[len(self.sent) :])
        elif not self.sent.startswith(self._seen):
            self._diverged = True
            self._stream.new_turn()
            self._send(self._seen)

    def _send(self, text: str) -> None:
        if text:
            self.sent += text
            self._stream.write(text)
