"""The HTTP server pieces every sleuth service shares — the agent's and the tool services' (needs
the ``server`` extra: fastapi/starlette, uvicorn, httptools):

- :mod:`sleuth.core.http.server`: uvicorn with deadlines and size limits on a request's headers;
- :mod:`sleuth.core.http.request_guard`: ASGI middleware bounding a request's body in size and
  time, shedding load, and cancelling the work of a client that went away;
- :mod:`sleuth.core.http.error_shapes`: the one JSON shape of every error response;
- :mod:`sleuth.core.http.json_body`: a JSON body parsed strictly, its nesting bounded before
  parsing (:data:`~sleuth.core.http.json_body.MAX_JSON_DEPTH`), lone surrogates refused;
- :mod:`sleuth.core.http.jsonrpc_intake`: the same check in front of a JSON-RPC SDK's route
  (MCP, A2A), refusals as JSON-RPC errors.
"""
