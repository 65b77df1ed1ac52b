"""The one place that reads the agent's trace format (:mod:`sleuth.agent.trace`).

A recorded-traces file is JSONL; each line is either an agent API result
(``{"answer": ..., "citations": [...], "trace": {...}}``, optionally with an ``id``) or a bare
``Trace``. From a trace the evals take the tool calls of the first model step (the decision TSA
scores), the final answer and the contexts (observations of successful tool calls), and from an
API result the OpenTelemetry trace id of the request (``sleuth.traceId``, present when the
agent's tracing is on). When the agent's trace or result changes, this module is what to fix.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sleuth.agent.trace import ModelStep, Trace
from sleuth.core.errors import DatasetError
from sleuth.evals.splits import content_key
from sleuth.evals.tsa.scoring import ActualCall


@dataclass(frozen=True)
class RecordedRun:
    id: str | None
    question: str
    answer: str
    first_calls: list[ActualCall]
    contexts: list[str]
    context_ids: list[str]
    trace_id: str | None = None


_TRACE_ID = re.compile(r"[0-9a-f]{32}")


def trace_id_of(data: dict[str, Any], header: str | None = None) -> str | None:
    """The request's trace id: the body's ``sleuth.traceId``, else the response header
    (:data:`~sleuth.core.names.TRACE_ID_HEADER`); None
    when tracing was off (or the value is not 32 lowercase hex digits)."""
    part = data.get("sleuth")
    value = part.get("traceId") if isinstance(part, dict) else None
    for candidate in (value, header):
        if isinstance(candidate, str) and _TRACE_ID.fullmatch(candidate.strip().lower()):
            return candidate.strip().lower()
    return None


def _from_trace(
    trace: Trace, answer: str | None, rid: str | None, trace_id: str | None = None
) -> RecordedRun:
    steps = trace.model_steps()
    first = steps[0] if steps else None
    calls = [
        ActualCall.from_openai({"function": {"name": c.name, "arguments": c.arguments_text}})
        for c in (first.tool_calls if first else [])
    ]
    final = next((s.content for s in reversed(steps) if isinstance(s, ModelStep) and s.content), "")
    ok = [c for c in trace.tool_calls() if c.status in ("ok", "cached")]
    ids = [c.citations[0].get("id", c.id) if c.citations else c.id for c in ok]
    return RecordedRun(
        id=rid,
        question=trace.question,
        answer=answer or final or "",
        first_calls=calls,
        contexts=trace.contexts(),
        context_ids=ids,
        trace_id=trace_id,
    )


def parse_record(data: dict[str, Any]) -> RecordedRun:
    """One line of a recorded-traces file."""
    raw = data.get("trace", data)
    trace = Trace.model_validate(raw)
    answer = data.get("answer") if "trace" in data else None
    rid = data.get("id")
    return _from_trace(
        trace,
        answer if isinstance(answer, str) else None,
        rid if isinstance(rid, str) else None,
        trace_id_of(data),
    )


def load_recorded(path: Path | str) -> list[RecordedRun]:
    p = Path(path)
    out: list[RecordedRun] = []
    for number, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                raise DatasetError("each line must be a JSON object", path=str(p), line=number)
            out.append(parse_record(data))
        except json.JSONDecodeError as exc:
            raise DatasetError(f"not valid JSON ({exc.msg})", path=str(p), line=number) from None
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(x) for x in first["loc"])
            raise DatasetError(first["msg"], path=str(p), line=number, field=field) from None
    return out


def index_by_question(runs: list[RecordedRun]) -> dict[str, RecordedRun]:
    """Recorded runs keyed by case id when present, and by normalised question text."""
    out: dict[str, RecordedRun] = {}
    for r in runs:
        out[content_key(r.question)] = r
        if r.id:
            out[r.id] = r
    return out
