"""The answer stream's bookkeeping: paragraphs between turns, retries not repeated, the final
answer shown once."""

from __future__ import annotations

import pytest

from sleuth.agent.events import AnswerStream, AnswerText, RunEvent, TextRelay

pytestmark = pytest.mark.unit


def _stream() -> tuple[AnswerStream, list[RunEvent]]:
    seen: list[RunEvent] = []
    return AnswerStream(seen.append), seen


def _text(events: list[RunEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, AnswerText))


def test_a_retried_turn_is_not_repeated() -> None:
    stream, events = _stream()
    relay = TextRelay(stream)
    relay.new_attempt()
    for piece in ("In 2025 ", "you sig"):
        relay(piece)
    relay.new_attempt()  # the stream was cut; the retry starts over
    for piece in ("In 2025 you", " signed 47", " contracts."):
        relay(piece)
    stream.finish("In 2025 you signed 47 contracts.")
    assert _text(events) == "In 2025 you signed 47 contracts."


def test_a_retry_that_says_something_else_follows_in_a_new_paragraph() -> None:
    stream, events = _stream()
    relay = TextRelay(stream)
    relay.new_attempt()
    relay("Forty")
    relay.new_attempt()
    relay("47 contracts.")
    assert _text(events) == "Forty\n\n47 contracts."


def test_an_answer_nobody_streamed_is_written_whole_after_earlier_text() -> None:
    stream, events = _stream()
    TextRelay(stream)("Let me look that up.")  # text before tool calls, relayed as it came
    stream.finish("The iteration limit was reached.")
    assert _text(events) == "Let me look that up.\n\nThe iteration limit was reached."
    stream.finish("The iteration limit was reached.")  # already shown: nothing more
    assert _text(events) == "Let me look that up.\n\nThe iteration limit was reached."
