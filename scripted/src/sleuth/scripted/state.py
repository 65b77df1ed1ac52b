"""What a scripted server holds between requests: the scenario in force, the sequential cursor,
the engine queue, the API key, and the log of what it received (read back by the control routes
and by tests)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sleuth.scripted.engine import Engine
from sleuth.scripted.scenario import Scenario, ScriptedResponse, assistant_count

Responder = Callable[[dict[str, Any]], ScriptedResponse | None]


class ScriptState:
    """The scenario in force, the sequential cursor, and the log of received requests."""

    def __init__(
        self,
        scenario: Scenario,
        responder: Responder | None = None,
        api_key: str | None = None,
        engine: Engine | None = None,
    ) -> None:
        self.scenario = scenario
        self.engine = engine or Engine()  # the queue behind vllm:num_requests_* (engine.py)
        self.responder = responder
        self.api_key = api_key or None  # the bearer token the API routes require, if any
        self.unauthorized = 0  # API requests refused for a missing or wrong key
        self.requests: list[dict[str, Any]] = []
        self.rerank_requests: list[dict[str, Any]] = []
        self.traceparents: list[str | None] = []  # each chat request's W3C traceparent header
        self._cursor = 0
        self._lock = threading.Lock()

    def replace(self, scenario: Scenario) -> None:
        with self._lock:
            self.scenario = scenario
            self._cursor = 0

    def clear_requests(self) -> None:
        with self._lock:
            self.requests.clear()
            self.rerank_requests.clear()
            self.traceparents.clear()

    def lock(self) -> threading.Lock:
        return self._lock

    def select(self, request: dict[str, Any]) -> ScriptedResponse:
        with self._lock:
            self.requests.append(request)
            scenario = self.scenario
            if self.responder is not None:
                chosen = self.responder(request)
                if chosen is not None:
                    return chosen
            for rule in scenario.rules:
                if rule.match.matches(request):
                    return rule.response
            if scenario.turn_selection == "sequential":
                index = self._cursor
                self._cursor += 1
            else:
                index = assistant_count(request.get("messages") or [])
            if index < len(scenario.turns):
                return scenario.turns[index]
            return scenario.fallback


__all__ = ["Responder", "ScriptState"]
