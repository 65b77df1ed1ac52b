"""A scripted OpenAI-compatible model server: real HTTP, the real wire format, scripted answers.

It stands in for vLLM in tests and benchmarks and is never presented as a model. It serves
``POST /v1/chat/completions`` (JSON, or server-sent events with ``"stream": true``; tool calls in
the OpenAI format, several per turn for parallel calls), ``GET /v1/models`` and
``POST /v1/embeddings`` (hash-seeded unit vectors, or fixed vectors per input text).

Python use::

    from sleuth.scripted import (
        Match, Rule, Scenario, ScriptedResponse, ScriptedServer, ScriptedToolCall,
        seed_latency_profile,
    )

    scenario = Scenario(
        turns=[  # turns[k] answers a request that already holds k assistant messages
            ScriptedResponse(tool_calls=[
                ScriptedToolCall(name="sql_query", arguments={"query": "SELECT 1"}),
                ScriptedToolCall(name="vector_search", arguments='{"query": '),  # malformed
            ]),
            ScriptedResponse(content="47 contracts.", delay_ms=200),  # a slow turn
            ScriptedResponse(status=503, error_message="overloaded"),  # a failing turn
        ],
        rules=[  # tried first, in order; all given conditions must hold
            Rule(match=Match(system_contains="faithfulness", json_mode=True),
                 response=ScriptedResponse(content='{"statements": []}')),
            Rule(match=Match(last_message_contains="ping"),
                 response=ScriptedResponse(content="pong")),
        ],
        latency=seed_latency_profile(),  # TTFT 150 ms < 4k tokens, 220 ms at 8k; 5 ms/token
    )
    with ScriptedServer(scenario) as server:        # uvicorn in a thread, free port
        client = openai.OpenAI(base_url=server.url, api_key="unused")
        ...
        server.requests()                            # chat request bodies received, in order

A request carrying a JSON Schema (``response_format``) gets its turn the way a constrained server
writes it, checked against that schema (:mod:`sleuth.scripted.structured`): guided tool calls as
text, and a 400 naming the schema's complaint when the schema is invalid or refuses the turn;
``ScriptedResponse(raw=True)`` sends content verbatim (a reply cut short).
``ScriptedResponse(cut_after=N)`` ends a streamed reply after N deltas with no ``finish_reason``
and no ``[DONE]``: a server that died mid-answer.

``ScriptedProcess(scenario)`` has the same API but runs the server as a child process (for
benchmarks). ``ScriptedServer(scenario, responder=fn)`` calls ``fn(request_body)`` first; a
returned :class:`ScriptedResponse` answers, ``None`` falls through to rules and turns.

Files: the same :class:`Scenario` as JSON or YAML (camelCase or snake_case keys), e.g.::

    model: scripted
    turnSelection: position        # or "sequential": one turn per request in arrival order
    turns:
      - toolCalls: [{name: sql_query, arguments: {query: "SELECT 1"}}]
      - content: "47 contracts."
    rules:
      - match: {lastMessageContains: ping}
        response: {content: pong}
    latency: {ttftPoints: [[0, 150], [4000, 150], [8000, 220]], perTokenMs: 5}
    embeddings: {dimensions: 16, vectors: {"hello": [1, 0, 0, ...]}}

served by ``sleuth scripted-model --scenario FILE --port 8000`` (``--seed-latency`` applies the
seed profile). Control routes for out-of-process use: ``GET``/``DELETE /_scripted/requests``,
``PUT /_scripted/scenario``.
"""

from sleuth.scripted.app import create_app
from sleuth.scripted.runner import ScriptedProcess, ScriptedServer
from sleuth.scripted.scenario import (
    EmbeddingScript,
    LatencyProfile,
    Match,
    Rule,
    Scenario,
    ScriptedResponse,
    ScriptedToolCall,
    estimate_tokens,
    load_scenario,
    seed_latency_profile,
)
from sleuth.scripted.state import ScriptState

__all__ = [
    "EmbeddingScript",
    "LatencyProfile",
    "Match",
    "Rule",
    "Scenario",
    "ScriptState",
    "ScriptedProcess",
    "ScriptedResponse",
    "ScriptedServer",
    "ScriptedToolCall",
    "create_app",
    "estimate_tokens",
    "load_scenario",
    "seed_latency_profile",
]
