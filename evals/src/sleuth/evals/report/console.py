"""A run's summary for the terminal (and CI logs, and the eval Job's pod log): figures, the
lowest rows of each score with the trace id of their agent request, failures, the gate."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LOWEST = 5
"""Rows listed per score, worst first."""


def lowest_rows(doc: Mapping[str, Any], name: str, n: int = LOWEST) -> list[Mapping[str, Any]]:
    """The ``n`` worst rows of score ``name`` (highest first for a lower-is-better score)."""
    scored = [r for r in doc.get("rows", []) if r["scores"].get(name) is not None]
    worse_high = doc["metrics"][name]["direction"] == "max"
    return sorted(scored, key=lambda r: r["scores"][name], reverse=worse_high)[:n]


def print_summary(doc: Mapping[str, Any]) -> None:
    """The run's figures, failures and gate verdict on stdout."""
    print(f"{doc['kind']} agent={doc['agent']} dataset={doc['dataset']} split={doc['split']}")
    for name, m in doc["metrics"].items():
        value = "n/a" if m["value"] is None else f"{m['value']:.4f}"
        mark = {True: "ok", False: "FAIL", None: ""}[m["passed"]]
        thr = "" if m["threshold"] is None else f" (threshold {m['threshold']})"
        print(f"  {name:28s} {value}{thr} rows={m['rows']} failed={m['failed_rows']} {mark}")
    if doc["kind"] == "tsa":
        for tool, t in doc["summary"]["per_tool"].items():
            shown = "n/a" if t["tsa"] is None else f"{t['tsa']:.4f}"
            print(f"  per tool {tool:19s} {shown} ({t['tool_correct']}/{t['cases']})")
        for stratum, t in doc["summary"].get("per_stratum", {}).items():
            shown = "n/a" if t["tsa"] is None else f"{t['tsa']:.4f}"
            print(f"  per stratum {stratum:16s} {shown} ({t['tool_correct']}/{t['cases']})")
        s = doc["summary"]
        seconds = s.get("seconds_per_case")
        print(
            f"  malformed replies {s.get('malformed_replies', 0)}, calls written as text "
            f"{s.get('text_calls', 0)}, seconds per case "
            + ("n/a" if seconds is None else f"{seconds:.2f}")
        )
    if doc["kind"] == "ragas":
        for name in doc["metrics"]:
            for r in lowest_rows(doc, name):
                trace = r.get("traceId") or "n/a"
                print(f"  lowest {name:21s} {r['scores'][name]:.4f} row {r['id']} trace {trace}")
    for f in doc["failures"][:20]:
        if doc["kind"] == "tsa":
            print(f"  failed: case {f['id']}: {f['error']}")
        else:
            print(f"  failed: row {f['row_id']} {f['metric']}: {f['reason']}: {f['detail']}")
    if len(doc["failures"]) > 20:
        print(f"  ... {len(doc['failures']) - 20} more failures in the JSON result")
    if doc.get("skipped"):
        why = (
            "cases with nothing relevant to retrieve"
            if doc["kind"] == "retrieval"
            else "adversarial rows answered without retrieval"
        )
        print(f"  skipped: {len(doc['skipped'])} ({why})")
    if doc["kind"] == "retrieval":
        lat = doc["latency"]
        if lat["calls"]:
            print(
                f"  latency per call: p50 {lat['p50_seconds'] * 1000:.1f} ms, "
                f"p99 {lat['p99_seconds'] * 1000:.1f} ms over {lat['calls']} calls "
                f"(K={doc['config']['k']})"
            )
    usage = doc.get("usage") or {}
    print(f"  tokens: {usage.get('total_tokens', 0)}")
    print(
        "gate: "
        + ("passed" if doc["gate"]["passed"] else "FAILED: " + "; ".join(doc["gate"]["reasons"]))
    )
