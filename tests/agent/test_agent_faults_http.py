"""Fault injection against the agent's HTTP API, from outside: ``sleuth agent`` as a real process,
the scripted model server over HTTP, hostile and unlucky clients on real sockets.

Asserts on what a client sees (status, the one error shape, the field and the limit named) and
on what the model server sees (nothing, for a refused request).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sleuth.scripted import Match, Rule, Scenario, ScriptedResponse, ScriptedServer
from tests.agent.agent_process import AgentProcess
from tests.support.polling import eventually

pytestmark = pytest.mark.integration

ANSWER = Scenario(turns=[ScriptedResponse(content="an answer")])


def _config(model_url: str, **extra: Any) -> dict[str, Any]:
    model = {"endpoint": model_url, "servedModelName": "scripted", **extra.pop("model", {})}
    return {"model": model, "planner": {"fallbackToRouter": False}, **extra}


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedServer]:
    with ScriptedServer(ANSWER) as server:
        yield server


@pytest.fixture(scope="module")
def served(
    model: ScriptedServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AgentProcess]:
    limits = {"headerReadTimeoutSeconds": 1, "bodyReadTimeoutSeconds": 2}
    config = _config(model.url, model={"maxModelLen": 4096, "maxTokens": 1024}, limits=limits)
    workdir = tmp_path_factory.mktemp("agent-faults")
    with AgentProcess(config, workdir, name="faults") as process:
        yield process


@pytest.fixture
def agent(served: AgentProcess, model: ScriptedServer) -> AgentProcess:
    model.clear_requests()
    return served


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}, body
    assert {"message", "type", "field"} <= set(body["error"]), body
    error: dict[str, Any] = body["error"]
    return error


def _post(agent: AgentProcess, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.post(f"{agent.url}{path}", timeout=30, **kwargs)


# --- 1. sizes --------------------------------------------------------------------------------


def test_a_body_over_the_limit_is_refused_before_it_is_read(
    agent: AgentProcess, model: ScriptedServer
) -> None:
    big = json.dumps({"question": "x" * (2 * 1024 * 1024)})
    error = _error(_post(agent, "/v1/query", content=big), 413)
    assert error["type"] == "request_too_large"
    assert "limits.maxBodyBytes" in error["message"]

    def chunked() -> Iterator[bytes]:  # no Content-Length: counted while it arrives
        yield b'{"question": "'
        for _ in range(40):
            yield b"y" * 65536
        yield b'"}'

    error = _error(_post(agent, "/v1/chat/completions", content=chunked()), 413)
    assert "limits.maxBodyBytes" in error["message"]
    assert model.requests() == []
    assert agent.value("sleuth_agent_rejected_requests_total", agent="faults", reason="too_large")


@pytest.mark.parametrize(
    ("path", "body", "field", "limit"),
    [
        ("/v1/query", {"question": "q" * 20001}, "question", "maxQuestionChars"),
        (
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "q" * 20001}]},
            "messages.0.content",
            "maxQuestionChars",
        ),
        (
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "h"}] * 5001},
            "messages",
            "maxHistoryMessages",
        ),
        (
            "/v1/query",
            {"question": "q", "history": [{"role": "user", "content": "h" * 100000}] * 5},
            "history",
            "maxHistoryChars",
        ),
        (
            "/v1/chat/completions",
            {
                "messages": [
                    *[{"role": "assistant", "content": "h" * 60000}] * 2,
                    {"role": "user", "content": "q"},
                ]
            },
            "messages",
            "maxHistoryChars",
        ),
    ],
)
def test_one_limit_policy_for_both_endpoints(
    agent: AgentProcess,
    model: ScriptedServer,
    path: str,
    body: dict[str, Any],
    field: str,
    limit: str,
) -> None:
    error = _error(_post(agent, path, json=body), 422)
    assert error["field"] == field
    assert error["message"].startswith(field)
    assert f"limits.{limit}" in error["message"]
    assert model.requests() == []


def test_a_prompt_over_the_models_context_is_refused(
    agent: AgentProcess, model: ScriptedServer
) -> None:
    # maxModelLen 4096 - maxTokens 1024: about 12 KB of prompt; 16,000 characters is over it
    question = "how many contracts " * 800
    for path, body in [
        ("/v1/query", {"question": question}),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": question}]}),
    ]:
        error = _error(_post(agent, path, json=body), 413)
        assert error["type"] == "request_too_large"
        assert "model.maxModelLen" in error["message"]
    assert model.requests() == []
    assert _post(agent, "/v1/query", json={"question": "how many contracts?"}).status_code == 200


# --- 8. one error shape, strict types --------------------------------------------------------


@pytest.mark.parametrize(
    ("request_kwargs", "status", "kind", "field"),
    [
        ({"content": b'{"question": '}, 400, "invalid_request_error", None),
        ({"content": b"\xff\xfe not utf-8"}, 400, "invalid_request_error", None),
        ({"content": b"[1, 2]"}, 422, "invalid_request_error", None),
        (
            {"content": b"question=q", "headers": {"content-type": "text/plain"}},
            415,
            "unsupported_media_type",
            None,
        ),
        ({"json": {"question": "   \n\t "}}, 422, "invalid_request_error", "question"),
        ({"json": {"question": 42}}, 422, "invalid_request_error", "question"),
        (
            {"json": {"question": "q", "history": [{"role": "system", "content": "x"}]}},
            422,
            "invalid_request_error",
            "history.0.role",
        ),
    ],
)
def test_query_errors_have_one_shape(
    agent: AgentProcess,
    request_kwargs: dict[str, Any],
    status: int,
    kind: str,
    field: str | None,
) -> None:
    error = _error(_post(agent, "/v1/query", **request_kwargs), status)
    assert error["type"] == kind
    assert error["field"] == field
    assert "char" not in str(error["field"])  # never a character offset as a field


def test_invalid_json_says_where_and_names_no_offset_field(agent: AgentProcess) -> None:
    error = _error(_post(agent, "/v1/query", content=b'{"question": "q",}'), 400)
    assert error["message"].startswith("the body is not valid JSON (line 1, column")


def test_chat_takes_strict_types(agent: AgentProcess) -> None:
    messages = [{"role": "user", "content": "q"}]
    error = _error(
        _post(agent, "/v1/chat/completions", json={"messages": messages, "stream": "yes"}), 422
    )
    assert error["field"] == "stream"
    error = _error(
        _post(agent, "/v1/chat/completions", json={"messages": [{"role": "user", "content": 7}]}),
        422,
    )
    assert error["field"].startswith("messages.0.content")


def test_unknown_routes_and_methods_have_the_shape(agent: AgentProcess) -> None:
    assert _error(httpx.get(f"{agent.url}/v1/nothing"), 404)["type"] == "not_found"
    assert _error(httpx.get(f"{agent.url}/v1/query"), 405)["type"] == "method_not_allowed"


# --- 11. slow clients ------------------------------------------------------------------------


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _closed(sock: socket.socket) -> bytes | None:
    """What the server sent before closing, or None while the connection is still open."""
    sock.settimeout(0.05)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return data or b"<closed>"


def test_trickled_headers_are_cut_off(agent: AgentProcess) -> None:
    silent = [_connect(agent.url) for _ in range(20)]
    trickling = [_connect(agent.url) for _ in range(20)]
    for sock in trickling:
        sock.sendall(b"POST /v1/query HTTP/1.1\r\nHost: x\r\n")
    stop = threading.Event()

    def trickle() -> None:  # one more header byte every 0.2 s: never a complete request
        while not stop.wait(0.2):
            for sock in trickling:
                with contextlib.suppress(OSError):
                    sock.sendall(b"X")

    feeder = threading.Thread(target=trickle, daemon=True)
    feeder.start()
    try:
        closed = eventually(
            lambda: all(_closed(s) is not None for s in silent + trickling),
            timeout=30,
            what="every slow connection closed by the agent",
            interval=0.2,
        )
        assert closed
    finally:
        stop.set()
        feeder.join()
        for sock in silent + trickling:
            sock.close()
    # the server is fine and answers others meanwhile
    assert httpx.get(f"{agent.url}/healthz").status_code == 200


def test_oversized_headers_are_refused(agent: AgentProcess) -> None:
    response = httpx.get(f"{agent.url}/healthz", headers={"X-Big": "b" * 40000})
    assert response.status_code == 431


def test_a_body_that_never_completes_gets_408(agent: AgentProcess) -> None:
    sock = _connect(agent.url)
    try:
        sock.sendall(
            b"POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n" + b'{"question": '
        )
        data = eventually(lambda: _closed(sock), timeout=30, what="the slow body answered")
    finally:
        sock.close()
    assert data.startswith(b"HTTP/1.1 408"), data[:200]
    assert b'"type":"request_timeout"' in data.replace(b" ", b"")


def test_a_client_that_leaves_gives_its_slot_back(scripted: ScriptedServer, tmp_path: Path) -> None:
    late = ScriptedResponse(content="late", delay_ms=120_000)  # the model keeps the first run
    scripted.set_scenario(
        Scenario(
            rules=[Rule(match=Match(last_user_contains="first"), response=late)],
            fallback=ScriptedResponse(content="done"),
        )
    )
    config = _config(scripted.url, maxConcurrentRequests=1)
    with AgentProcess(config, tmp_path, name="slots") as agent:
        for path, body in [
            ("/v1/query", {"question": "first"}),
            ("/v1/chat/completions", {"messages": [{"role": "user", "content": "first"}]}),
        ]:
            sock = _connect(agent.url)
            payload = json.dumps(body).encode()
            sock.sendall(
                f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\n\r\n".encode()
                + payload
            )
            eventually(
                lambda: agent.value("sleuth_agent_requests_in_flight", agent="slots") == 1,
                timeout=30,
                what="the first request admitted",
                interval=0.1,
            )
            sock.close()  # the client goes away; its run is still waiting for the model
            eventually(
                lambda: agent.value("sleuth_agent_requests_in_flight", agent="slots") == 0,
                timeout=30,
                what="the slot released",
                interval=0.1,
            )
            second = httpx.post(f"{agent.url}/v1/query", json={"question": "second"}, timeout=30)
            assert second.status_code == 200, second.text
            assert second.json()["answer"] == "done"
        assert agent.value("sleuth_agent_client_disconnects_total", agent="slots") == 2
