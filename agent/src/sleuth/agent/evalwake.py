"""``POST /v1/eval/wake``: the agent wakes its model server for an eval that calls it itself.

``sleuth eval tsa --agent-url`` sends every case straight to the agent's model server, with the
agent's first step (:mod:`sleuth.agent.firststep`). A model server scaled to zero has no
endpoint, and nothing the eval sends it can wake it: its ScaledObject activates on the agents'
``sleuth_agent_requests_waiting_for_model``. So before its cases the eval asks the agent to wake
its model. The agent waits as a run of its own would (:class:`sleuth.agent.wake.ModelWake`:
counted in that series, polling ``/models``, up to ``wakeWaitSeconds``) and answers

- 200 ``{"sleeps": true, "waitedSeconds": s}`` once the server answers;
- 503, type ``model_asleep``, when the bound is over first (the eval's Job fails and says so);
- 200 ``{"sleeps": false, "waitedSeconds": 0}`` at once for a model server that never sleeps
  (no ``spec.model.autoscaling``).

Only callers granted ``evaluation`` may ask: a wake costs replica-time on a GPU.
"""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response

from sleuth.agent.access.caller import Caller, current_caller
from sleuth.agent.firststep import evaluation_only
from sleuth.agent.wake import ModelWake
from sleuth.core.http.error_shapes import error_body

WAKE_PATH = "/v1/eval/wake"

wake_router = APIRouter()


@wake_router.post(WAKE_PATH, response_model=None)
async def wake_model(
    request: Request, caller: Annotated[Caller, Depends(current_caller)]
) -> Response:
    if not caller.evaluation:
        return evaluation_only("waking the model server is allowed")
    wake: ModelWake | None = request.app.state.service.wake
    if wake is None:
        return JSONResponse({"sleeps": False, "waitedSeconds": 0})
    started = time.monotonic()
    if not await wake.wait():
        return error_body(
            503,
            f"model server asleep (scaled to zero): not awake after {wake.bound_s:g} s "
            "(spec.model.autoscaling.wakeWaitSeconds)",
            "model_asleep",
        )
    return JSONResponse({"sleeps": True, "waitedSeconds": round(time.monotonic() - started, 3)})


__all__ = ["WAKE_PATH", "wake_router"]
