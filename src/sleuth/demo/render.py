"""Print an agent run as the seed article does: Thought, Action, Observation per iteration."""

from __future__ import annotations

import json
import textwrap
from typing import Any

from sleuth.agent.trace import ModelStep, ToolCallRecord, ToolStep, Trace

WIDTH = 100


def _wrap(text: str, indent: str) -> str:
    lines = []
    for paragraph in text.splitlines() or [""]:
        lines.append(
            textwrap.fill(paragraph, WIDTH, initial_indent=indent, subsequent_indent=indent)
            or indent
        )
    return "\n".join(lines)


def _action(call: ToolCallRecord) -> str:
    args = call.arguments if call.arguments is not None else "<malformed arguments>"
    shown = json.dumps(args, ensure_ascii=False) if isinstance(args, dict) else args
    return f"{call.tool} {shown}"


def _observation(call: ToolCallRecord) -> list[str]:
    try:
        content: Any = json.loads(call.observation)
    except ValueError:
        return [call.observation[:400]]
    if isinstance(content, dict) and "error" in content:
        return [f"ERROR: {content['error']}"]
    if isinstance(content, dict) and isinstance(content.get("rows"), list):
        rows = content["rows"]
        shown = [json.dumps(r, ensure_ascii=False) for r in rows[:5]]
        if len(rows) > 5:
            shown.append(f"... {len(rows)} rows in all")
        return shown or ["(no rows)"]
    if isinstance(content, dict) and isinstance(content.get("results"), list):
        out = []
        for r in content["results"]:
            text = " ".join(str(r.get("text") or r.get("snippet") or "").split())
            label = r.get("id") or r.get("url") or ""
            title = r.get("title") or ""
            out.append(f"[{label}] {title} — {text[:160]}{'…' if len(text) > 160 else ''}")
        return out or ["(nothing found)"]
    return [json.dumps(content, ensure_ascii=False)[:400]]


def render_trace(trace: Trace, answer: str, citations: list[dict[str, str]]) -> str:
    """A human-readable account of one run."""
    out = [f"Question: {trace.question}", f"Planner:  {trace.model}"]
    if trace.degraded:
        out.append("          (degraded: the model server failed, the router answered)")
    thought: str | None = None
    for step in trace.steps:
        if isinstance(step, ModelStep):
            # A guided reply's thought; a native model's text before its calls.
            thought = step.thought or (step.content if step.tool_calls else None)
            if step.error:
                out.append(f"  Model error: {step.error}")
            continue
        assert isinstance(step, ToolStep)
        took = step.end_ms - step.start_ms
        mode = f"{len(step.calls)} calls in parallel" if step.parallel else "sequential"
        out.append("")
        out.append(f"Iteration {step.iteration}  ({mode}, tools took {took:.1f} ms)")
        if thought:
            out.append(_wrap(f"Thought: {thought}", "  "))
        for call in step.calls:
            out.append(
                _wrap(f"Action: {_action(call)}   [{call.status}, {call.duration_ms:.1f} ms]", "  ")
            )
            out.append("  Observation:")
            out.extend(_wrap(line, "    ") for line in _observation(call))
    last = trace.steps[-1] if trace.steps else None
    if isinstance(last, ModelStep) and not last.tool_calls and last.thought:
        out.append("")  # the answering turn's thought
        out.append(_wrap(f"Thought: {last.thought}", "  "))
    out.append("")
    out.append(
        f"Answer ({trace.iterations} iteration{'s' if trace.iterations != 1 else ''}, "
        f"{trace.total_ms:.0f} ms, stop: {trace.stop_reason}):"
    )
    out.append(_wrap(answer, "  "))
    if citations:
        out.append("Citations:")
        seen: set[str] = set()
        for c in citations:
            if c.get("id") in seen:
                continue
            seen.add(c.get("id", ""))
            out.append(f"  [{c.get('id')}] {c.get('source')}")
    return "\n".join(out)
