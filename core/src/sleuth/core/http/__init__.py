"""The HTTP server pieces every sleuth service shares — the agent's and the tool services' (needs
the ``server`` extra: fastapi/starlette, uvicorn, httptools):

- :mod:`sleuth.core.http.server`: uvicorn with deadlines and size limits on a request's headers;
- :mod:`sleuth.core.http.request_guard`: ASGI middleware bounding a request's body in size and
  time, shedding load, and cancelling the work of a client that went away;
- :mod:`sleuth.core.http.error_shapes`: the one JSON shape of every error response.
"""
