"""Asking the agent the golden questions: the rows a scheduled RAGAS run scores.

Each golden case goes to the agent's ``POST /v1/query``; its answer and trace (through
:mod:`sleuth.evals.traces`, the one reader of the trace format) become a :class:`RagSample` with
the golden reference, stratum and split, and the request's OpenTelemetry trace id (the body's
``sleuth.traceId`` or the ``X-Sleuth-Trace-Id`` header; None when the agent's tracing is off).
A 429 is retried after its ``Retry-After`` (at most twice); any other failure is a counted
:class:`Failure` of metric ``agent``, never a silent gap.

With tracing on, each question is asked inside its ``eval_case`` span
(:class:`~sleuth.evals.tracing.EvalTrace`) whose ``traceparent`` goes with it: the agent's trace
is that span's, and a row keeps that id even when the agent itself does not trace.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from sleuth.core.names import EVAL_HEADER, TRACE_ID_HEADER
from sleuth.evals.golden.cases import GoldenCase
from sleuth.evals.progress import Progress
from sleuth.evals.rag.agentauth import AgentCredential
from sleuth.evals.rag.runner import Failure
from sleuth.evals.traces import RecordedRun, parse_record, trace_id_of
from sleuth.evals.tracing import EvalTrace
from sleuth.scoring.samples import RagSample

AGENT_METRIC = "agent"


@dataclass
class Collected:
    rows: list[RagSample]
    failures: list[Failure] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)


async def _ask(
    client: httpx.AsyncClient,
    url: str,
    question: str,
    headers: dict[str, str],
    credential: AgentCredential | None = None,
) -> dict[str, Any]:
    for _ in range(3):
        # The eval header keeps the scheduled eval's questions out of the agent's online
        # sampling (honoured for callers the agent grants evaluation).
        auth = credential.headers() if credential is not None else {}
        resp = await client.post(
            url, json={"question": question}, headers={**headers, **auth, EVAL_HEADER: "1"}
        )
        if resp.status_code == 429:
            await asyncio.sleep(min(30.0, float(resp.headers.get("Retry-After", "1") or 1)))
            continue
        resp.raise_for_status()
        data: dict[str, Any] = resp.json()
        trace_id = trace_id_of(data, resp.headers.get(TRACE_ID_HEADER))
        part = data.get("sleuth")
        if trace_id and (part is None or isinstance(part, dict)):
            # the saved record (--record) keeps the id even when only the header had it
            data["sleuth"] = {**(part or {}), "traceId": trace_id}
        return data
    raise httpx.HTTPStatusError(
        "still overloaded (429) after 2 retries", request=resp.request, response=resp
    )


async def collect(
    cases: Sequence[GoldenCase],
    agent_url: str,
    *,
    concurrency: int = 4,
    timeout_s: float = 120.0,
    progress: bool = False,
    trace: EvalTrace | None = None,
    credential: AgentCredential | None = None,
) -> Collected:
    """Ask the agent every case; rows keep the order of ``cases``. ``credential``: who the eval
    is to the agent (a bearer token file or API key)."""
    spans = trace or EvalTrace.off()
    url = agent_url.rstrip("/") + "/v1/query"
    sem = asyncio.Semaphore(max(1, concurrency))
    bar = Progress(len(cases), "agent", enabled=progress)

    async with httpx.AsyncClient(timeout=timeout_s) as client:

        async def asked(case: GoldenCase) -> Failure | tuple[dict[str, Any], RecordedRun]:
            """The agent's answer to ``case``, or why there is none (inside its span)."""
            try:
                with spans.case(case.id, case.stratum) as headers:
                    data = await _ask(client, url, case.question, headers, credential)
                    return data, parse_record({"id": case.id, **data})
            except httpx.TimeoutException:
                return Failure(
                    case.id, AGENT_METRIC, "agent_timeout", f"no answer within {timeout_s:g}s"
                )
            except httpx.HTTPStatusError as exc:
                code = exc.response.status_code
                return Failure(case.id, AGENT_METRIC, f"agent_http_{code}", exc.response.text[:200])
            except (httpx.HTTPError, ValueError) as exc:
                return Failure(case.id, AGENT_METRIC, "agent_error", str(exc)[:200])

        async def one(case: GoldenCase) -> tuple[RagSample | Failure, dict[str, Any] | None]:
            async with sem:
                answered = await asked(case)
            if isinstance(answered, Failure):
                spans.failed(case.id, answered.reason)
                bar.advance(failed=True)
                return answered, None
            data, run = answered
            if not run.answer.strip():
                spans.failed(case.id, "empty_answer")
                bar.advance(failed=True)
                return Failure(
                    case.id, AGENT_METRIC, "empty_answer", "the agent answered nothing"
                ), {
                    "id": case.id,
                    **data,
                }
            bar.advance()
            row = RagSample(
                id=case.id,
                question=case.question,
                answer=run.answer,
                contexts=run.contexts,
                context_ids=run.context_ids,
                reference=case.reference,
                reference_context_ids=case.reference_context_ids,
                stratum=case.stratum,
                split=case.split,
                trace_id=run.trace_id or spans.case_trace_id(case.id),
            )
            return row, {"id": case.id, **data}

        results = await asyncio.gather(*(one(c) for c in cases))
    collected = Collected(rows=[])
    for item, record in results:
        if isinstance(item, Failure):
            collected.failures.append(item)
        else:
            collected.rows.append(item)
        if record is not None:
            collected.records.append(record)
    return collected


def write_records(records: Sequence[dict[str, Any]], path: Path | str) -> None:
    """The agent's raw results, one JSON line each (scorable later with ``--traces``)."""
    with Path(path).open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
